/* SPDX-License-Identifier: MIT */
/*
 * perf_map.c — parsing a runtime's perf map (see perf_map.h). Owns the map's descriptor, its
 * entries and their names. Must never print, never read more than its caps, never read but
 * by pread from the descriptor it was given, never hand out a name with control bytes.
 */
#include "stack/perf_map.h"
#include "stack/perf_map_budget.h"
#include "util/grow.h"
#include "util/proc_lines.h"
#include "util/target_named_open.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PERF_MAP_CHUNK       (64u << 10) /* bytes read at once: > PERF_MAP_LINE_MAX */
#define PERF_MAP_FIRST_CAP   1024        /* entries at first growth */
#define PERF_MAP_FIRST_BYTES (64u << 10) /* name bytes at first growth */
#define PERF_MAP_PATH_MAX    64          /* "/tmp/perf-" + a pid + ".map" */
#define PERF_MAP_LINE_MIN    6           /* "0 1 x\n": the shortest line that is kept */

_Static_assert(PERF_MAP_CHUNK > PERF_MAP_LINE_MAX, "a chunk holds a longest line");
_Static_assert(PERF_MAP_MAX_BYTES <= UINT32_MAX, "name offsets are 32-bit");

struct pm_entry {
        uint64_t start, size;
        uint32_t name; /* offset in names */
        uint32_t seq;  /* order written: the latest wins among equal starts */
};

struct perf_map {
        int fd;
        uint32_t owner;   /* the file's owner: whose share of the budget it is charged to */
        uint64_t charged; /* bytes charged to the budget (stack/perf_map_budget.h) */
        int over_budget;  /* the last read was refused by the budget (counted once) */
        uint64_t off;     /* bytes consumed (complete lines, or a too-long line's head) */
        int skipping;     /* inside a line longer than PERF_MAP_LINE_MAX */
        int full;         /* a cap was reached: nothing more is read */
        int sorted;
        struct pm_entry *v;
        size_t n, cap;
        char *names;
        size_t nlen, ncap;
};

/* pid as its own pid namespace numbers it (the last NSpid field), else pid. */
static pid_t ns_pid(pid_t pid, struct target_stats *st)
{
        char v[512]; /* at most 32 levels of up to 10 digits and a tab */
        const char *last;
        long n;

        if (proc_status_value(pid, "NSpid", v, sizeof(v), st))
                return pid;
        last = strrchr(v, '\t');
        n = strtol(last ? last + 1 : v, NULL, 10);
        return n > 0 ? (pid_t)n : pid;
}

int perf_map_find(pid_t pid, struct perf_map_file *out, struct target_stats *st)
{
        char path[PERF_MAP_PATH_MAX];
        struct stat sb;
        if (pid <= 0 || !out)
                return -EINVAL;
        snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)ns_pid(pid, st));
        int fd = target_open_named(pid, path, st);
        if (fd < 0)
                return fd;
        if (fstat(fd, &sb)) {
                int e = -errno;
                close(fd);
                return e;
        }
        out->dev = sb.st_dev;
        out->ino = sb.st_ino;
        return fd;
}

struct perf_map *perf_map_new(int fd)
{
        struct perf_map *m = calloc(1, sizeof(*m));
        struct stat sb;
        if (!m || fd < 0 || fstat(fd, &sb)) {
                free(m);
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        m->fd = fd;
        m->owner = (uint32_t)sb.st_uid;
        return m;
}

/* What the entries and names hold now: what the budget is charged for. */
static uint64_t held_bytes(const struct perf_map *m)
{
        return (uint64_t)m->n * sizeof(*m->v) + m->nlen;
}

void perf_map_free(struct perf_map *m)
{
        if (!m)
                return;
        if (m->fd >= 0)
                close(m->fd);
        perf_map_budget_release(m->owner, m->charged);
        free(m->v);
        free(m->names);
        free(m);
}

static int is_hex(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A hex number (optional 0x) at *p, at most 16 digits; advances *p. -1 if none. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
        const char *s = *p;
        if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                s += 2;
        uint64_t v = 0;
        int nd = 0;
        for (; s < end && is_hex(*s); s++, nd++) {
                if (nd == 16)
                        return -1;
                char c = *s;
                v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        if (!nd)
                return -1;
        *p = s;
        *out = v;
        return 0;
}

/* One line (without its newline): 1 kept, 0 not `START SIZE name` (counted), -ENOMEM. */
static int add_line(struct perf_map *m, const char *s, size_t len, struct target_stats *st)
{
        const char *p = s, *end = s + len;
        uint64_t start, size;
        if (len && end[-1] == '\r')
                end--;
        if (parse_hex(&p, end, &start) || p == end || *p++ != ' ' || parse_hex(&p, end, &size) ||
            p == end || *p++ != ' ' || p == end || !size || start + size < start) {
                target_stats_count(TARGET_STATS_FIELD(st, perf_map_bad_lines));
                return 0;
        }
        size_t nl = (size_t)(end - p);
        if (grow_array((void **)&m->v, &m->cap, sizeof(*m->v), m->n + 1, PERF_MAP_FIRST_CAP) ||
            grow_array((void **)&m->names, &m->ncap, 1, m->nlen + nl + 1, PERF_MAP_FIRST_BYTES))
                return -ENOMEM;
        char *name = m->names + m->nlen;
        for (size_t i = 0; i < nl; i++) /* no control byte reaches an output */
                name[i] = (unsigned char)p[i] < 0x20 || p[i] == 0x7f ? '?' : p[i];
        name[nl] = 0;
        m->v[m->n] = (struct pm_entry){start, size, (uint32_t)m->nlen, (uint32_t)m->n};
        m->n++;
        m->nlen += nl + 1;
        m->sorted = 0;
        return 1;
}

/* Parse the complete lines of buf[0, n): the bytes consumed (a partial last line is left for
 * the next read unless it is already too long), or -ENOMEM. */
static ssize_t parse_chunk(struct perf_map *m, const char *buf, size_t n, struct target_stats *st)
{
        size_t pos = 0;
        while (pos < n && !m->full) {
                const char *nl = memchr(buf + pos, '\n', n - pos);
                size_t len = nl ? (size_t)(nl - (buf + pos)) : n - pos;
                if (m->skipping) {
                        pos += len + (nl != NULL);
                        m->skipping = !nl;
                        continue;
                }
                if (len > PERF_MAP_LINE_MAX) {
                        target_stats_count(TARGET_STATS_FIELD(st, perf_map_bad_lines));
                        pos += len + (nl != NULL);
                        m->skipping = !nl;
                        continue;
                }
                if (!nl)
                        break; /* the runtime is still writing it */
                if (m->n >= PERF_MAP_MAX_ENTRIES) {
                        target_stats_count(TARGET_STATS_FIELD(st, perf_map_full));
                        m->full = 1;
                        break;
                }
                if (add_line(m, buf + pos, len, st) < 0)
                        return pos ? (ssize_t)pos : -ENOMEM;
                pos += len + 1;
        }
        return (ssize_t)pos;
}

static void reset(struct perf_map *m)
{
        perf_map_budget_release(m->owner, m->charged);
        m->charged = 0;
        m->off = 0;
        m->n = 0;
        m->nlen = 0;
        m->skipping = 0;
        m->full = 0;
        m->sorted = 0;
}

/* Charge what parsing got more bytes may add at most (a line of PERF_MAP_LINE_MIN bytes is
 * an entry and a name byte): 1 charged, 0 refused by the budget (counted once until a charge
 * fits again). */
static int charge_read(struct perf_map *m, uint64_t got, struct target_stats *st)
{
        uint64_t worst = got / PERF_MAP_LINE_MIN * sizeof(*m->v) + got;
        if (perf_map_budget_charge(m->owner, worst)) {
                if (!m->over_budget)
                        target_stats_count(TARGET_STATS_FIELD(st, perf_map_budget));
                m->over_budget = 1;
                return 0;
        }
        m->over_budget = 0;
        m->charged += worst;
        return 1;
}

/* After a read: give back what the charge held beyond what the map holds now. */
static void settle_charge(struct perf_map *m)
{
        uint64_t held = held_bytes(m);
        if (m->charged > held) {
                perf_map_budget_release(m->owner, m->charged - held);
                m->charged = held;
        }
}

/* Read and parse from m->off up to size into buf: 0 or -errno. */
static int read_new_lines(struct perf_map *m, uint64_t size, char *buf, struct target_stats *st)
{
        while (!m->full && m->off < size) {
                if (m->off >= PERF_MAP_MAX_BYTES) {
                        target_stats_count(TARGET_STATS_FIELD(st, perf_map_full));
                        m->full = 1;
                        break;
                }
                uint64_t want = size - m->off;
                if (want > PERF_MAP_CHUNK)
                        want = PERF_MAP_CHUNK;
                if (want > PERF_MAP_MAX_BYTES - m->off)
                        want = PERF_MAP_MAX_BYTES - m->off;
                if (!charge_read(m, want, st))
                        break; /* read on at a later lookup, if there is room then */
                ssize_t got = pread(m->fd, buf, (size_t)want, (off_t)m->off);
                int e = errno;
                ssize_t used = got > 0 ? parse_chunk(m, buf, (size_t)got, st) : got;
                settle_charge(m);
                if (got < 0)
                        return -e;
                if (used < 0)
                        return (int)used;
                if (used == 0 && m->off + want >= PERF_MAP_MAX_BYTES && (uint64_t)got == want) {
                        /* a line across PERF_MAP_MAX_BYTES: the cap, not a line being written */
                        target_stats_count(TARGET_STATS_FIELD(st, perf_map_full));
                        m->full = 1;
                }
                if (used == 0)
                        break; /* end of file, or only a line still being written */
                m->off += (uint64_t)used;
        }
        return 0;
}

int perf_map_update(struct perf_map *m, struct target_stats *st)
{
        if (!m || m->fd < 0)
                return -EINVAL;
        struct stat sb;
        if (fstat(m->fd, &sb))
                return -errno;
        uint64_t size = (uint64_t)sb.st_size;
        if (size < m->off)
                reset(m); /* truncated: rewritten from its start */
        if (m->full || m->off >= size)
                return 0;
        /* the read buffer only while reading: thousands of maps hold none */
        char *buf = malloc(PERF_MAP_CHUNK);
        if (!buf)
                return -ENOMEM;
        int r = read_new_lines(m, size, buf, st);
        free(buf);
        return r;
}

static int cmp_entry(const void *a, const void *b)
{
        const struct pm_entry *x = a, *y = b;
        if (x->start != y->start)
                return x->start < y->start ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

const char *perf_map_lookup(struct perf_map *m, uint64_t addr)
{
        if (!m || !m->n)
                return NULL;
        if (!m->sorted) {
                qsort(m->v, m->n, sizeof(*m->v), cmp_entry);
                m->sorted = 1;
        }
        size_t lo = 0, hi = m->n; /* first entry with start > addr */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (m->v[mid].start <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (!lo)
                return NULL;
        const struct pm_entry *e = &m->v[lo - 1];
        return addr - e->start < e->size ? m->names + e->name : NULL;
}
