/* SPDX-License-Identifier: MIT */
/*
 * status_file.c — the status file's format (encoding and parsing of its records) and its
 * atomic replacement (see status_file.h): NAME.tmp created with O_EXCL|O_NOFOLLOW and renamed
 * over NAME, both relative to the directory's descriptor. One field table per record kind
 * serves both directions, so the writer and the readers cannot disagree on a key. Never
 * prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/status_file.h"
#include "service/trusted_dir.h"
#include "util/fs.h"

#define STATUS_TEXT_MIN 4096 /* first allocation of a status text */

enum field_type {
        F_INT,   /* int, decimal */
        F_UINT,  /* unsigned, decimal */
        F_U64,   /* uint64_t, decimal */
        F_HEX,   /* uint64_t, hexadecimal without 0x */
        F_STR,   /* char array, written through status_file_value */
        F_YESNO, /* int, "yes" / "no" */
};

struct field {
        const char *key;
        enum field_type type;
        size_t off, size;
};

#define FIELD(s, k, t, m)                                                                          \
        {                                                                                          \
                k, t, offsetof(struct s, m), sizeof(((struct s *)0)->m)                            \
        }
#define D(k, t, m) FIELD(status_daemon, k, t, m)
#define T(k, t, m) FIELD(status_target, k, t, m)

/* In file order. */
static const struct field daemon_fields[] = {
    D("pid", F_INT, pid),
    D("state", F_STR, state),
    D("started", F_U64, started),
    D("updated", F_U64, updated),
    D("pid_start", F_U64, pid_start),
    D("boot_id", F_STR, boot_id),
    D("period_ms", F_U64, period_ms),
    D("mode", F_STR, mode),
    D("samples", F_U64, samples),
    D("received", F_U64, received),
    D("context_samples", F_U64, context_samples),
    D("filtered", F_U64, filtered),
    D("lost", F_U64, lost),
    D("torn", F_U64, torn),
    D("threads", F_U64, threads),
    D("targets", F_UINT, targets),
    D("map_entries", F_UINT, map_entries),
    D("processes_seen", F_U64, processes_seen),
    D("files_written", F_U64, files_written),
    D("files_deleted", F_U64, files_deleted),
    D("chunks_written", F_U64, chunks_written),
    D("bytes_written", F_U64, bytes_written),
    D("current_file", F_STR, current_file),
    D("split", F_STR, split),
    D("process_files", F_UINT, process_files),
    D("overflow_samples", F_U64, overflow_samples),
    D("no_file_samples", F_U64, no_file_samples),
    D("refused_stacks", F_U64, refused_stacks),
    D("refused_labels", F_U64, refused_labels),
    D("refused_threads", F_U64, refused_threads),
    D("refused_files", F_U64, refused_files),
    D("refused_lines", F_U64, refused_lines),
    D("maps_deferred", F_U64, maps_deferred),
    D("perf_map_refused", F_U64, perf_map_refused),
    D("perf_map_bytes", F_U64, perf_map_bytes),
    D("pid_recycled", F_U64, pid_recycled),
    D("modules", F_U64, modules),
    D("modules_refused", F_U64, modules_refused),
    D("load_hook", F_STR, load_hook),
    D("events_limited", F_U64, events_limited),
    D("exec_events_limited", F_U64, exec_events_limited),
    D("targets_full", F_U64, targets_full),
    D("parser_pid", F_INT, parser_pid),
    D("parser_lanes", F_U64, parser_lanes),
    D("parser_evictions", F_U64, parser_evictions),
    D("parser_busy", F_U64, parser_busy),
    D("parser_restarts", F_U64, parser_restarts),
    D("parser_timeouts", F_U64, parser_timeouts),
    D("jobs_abandoned", F_U64, jobs_abandoned),
    D("targets_stuck", F_U64, targets_stuck),
    D("targets_returned", F_U64, targets_returned),
    D("first_wait_skips", F_U64, first_wait_skips),
    D("select_examined", F_U64, select_examined),
    D("select_selected", F_U64, select_selected),
    D("select_abandoned", F_U64, select_abandoned),
    D("select_full", F_U64, select_full),
    D("cap_eff", F_HEX, cap_eff),
};

static const struct field target_fields[] = {
    T("pid", F_INT, pid),
    T("comm", F_STR, comm),
    T("samples", F_U64, samples),
    T("context_samples", F_U64, context_samples),
    T("threads", F_UINT, threads),
    T("context", F_YESNO, context_located),
    T("stacks_refused", F_U64, stacks_refused),
    T("labels_refused", F_U64, labels_refused),
    T("threads_refused", F_U64, threads_refused),
    T("stuck", F_YESNO, stuck),
    T("file", F_STR, file), /* last, as before: readers match the file name at the line end */
};

#define U(k, t, m) FIELD(status_upload, k, t, m)
static const struct field upload_fields[] = {
    U("name", F_STR, name),
    U("state", F_STR, state),
    U("http_status", F_INT, http_status),
    U("spool_files", F_U64, spool_files),
    U("spool_bytes", F_U64, spool_bytes),
    U("delivered", F_U64, delivered),
    U("dropped", F_U64, dropped),
    U("pauses", F_U64, pauses),
};

#define NFIELDS(a) (sizeof(a) / sizeof((a)[0]))
/* A parsed record keeps STATUS_MAX_FIELDS pairs: a record with more would lose its last ones. */
_Static_assert(NFIELDS(daemon_fields) <= STATUS_MAX_FIELDS, "daemon record over STATUS_MAX_FIELDS");
_Static_assert(NFIELDS(target_fields) <= STATUS_MAX_FIELDS, "target record over STATUS_MAX_FIELDS");
_Static_assert(NFIELDS(upload_fields) <= STATUS_MAX_FIELDS, "upload record over STATUS_MAX_FIELDS");

__attribute__((format(printf, 2, 3))) static void text_printf(struct status_text *t,
                                                              const char *fmt, ...)
{
        va_list ap;
        int n;

        while (!t->err) {
                size_t room = t->cap - t->len;

                va_start(ap, fmt);
                n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? room : 0, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        t->err = -EINVAL;
                        return;
                }
                if (t->p && (size_t)n < room) {
                        t->len += (size_t)n;
                        return;
                }
                size_t nc = (t->cap ? t->cap * 2 : STATUS_TEXT_MIN) + (size_t)n;
                char *np = realloc(t->p, nc);

                if (!np) {
                        t->err = -ENOMEM;
                        return;
                }
                t->p = np;
                t->cap = nc;
        }
}

static void text_record(struct status_text *t, const char *kind, const struct field *f, size_t nf,
                        const void *rec)
{
        const char *base = rec;
        size_t i;

        text_printf(t, "%s", kind);
        for (i = 0; i < nf; i++) {
                const void *p = base + f[i].off;

                switch (f[i].type) {
                case F_INT:
                        text_printf(t, " %s=%d", f[i].key, *(const int *)p);
                        break;
                case F_UINT:
                        text_printf(t, " %s=%u", f[i].key, *(const unsigned *)p);
                        break;
                case F_U64:
                        text_printf(t, " %s=%" PRIu64, f[i].key, *(const uint64_t *)p);
                        break;
                case F_HEX:
                        text_printf(t, " %s=%" PRIx64, f[i].key, *(const uint64_t *)p);
                        break;
                case F_YESNO:
                        text_printf(t, " %s=%s", f[i].key, *(const int *)p ? "yes" : "no");
                        break;
                case F_STR: {
                        char v[PATH_MAX + 8];

                        status_file_value(v, sizeof(v), p);
                        text_printf(t, " %s=%s", f[i].key, v);
                        break;
                }
                }
        }
        text_printf(t, "\n");
}

void status_text_daemon(struct status_text *t, const struct status_daemon *d)
{
        text_record(t, "daemon", daemon_fields, NFIELDS(daemon_fields), d);
}

void status_text_target(struct status_text *t, const struct status_target *tg)
{
        text_record(t, "target", target_fields, NFIELDS(target_fields), tg);
}

void status_text_upload(struct status_text *t, const struct status_upload *up)
{
        text_record(t, "upload", upload_fields, NFIELDS(upload_fields), up);
}

void status_text_free(struct status_text *t)
{
        free(t->p);
        *t = (struct status_text){0};
}

int status_record_parse(char *line, struct status_record *r)
{
        char *save = NULL, *tok;

        r->n = 0;
        r->kind = strtok_r(line, " \n", &save);
        if (!r->kind)
                return -EINVAL;
        while ((tok = strtok_r(NULL, " \n", &save)) && r->n < STATUS_MAX_FIELDS) {
                char *eq = strchr(tok, '=');

                if (!eq)
                        continue;
                *eq = '\0';
                r->key[r->n] = tok;
                r->val[r->n++] = eq + 1;
        }
        return 0;
}

const char *status_record_get(const struct status_record *r, const char *key)
{
        int i;

        for (i = 0; i < r->n; i++)
                if (!strcmp(r->key[i], key))
                        return r->val[i];
        return NULL;
}

static int parse_u64(const char *v, int base, uint64_t max, uint64_t *out)
{
        char *end;
        unsigned long long n;

        if (!*v || *v == '-' || *v == '+' || *v == ' ')
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, base);
        if (errno || *end || n > max)
                return -EINVAL;
        *out = n;
        return 0;
}

static int decode_field(const struct field *f, const char *v, void *p)
{
        uint64_t n;
        int err = 0;

        switch (f->type) {
        case F_INT:
                err = parse_u64(v, 10, INT_MAX, &n);
                if (!err)
                        *(int *)p = (int)n;
                return err;
        case F_UINT:
                err = parse_u64(v, 10, UINT_MAX, &n);
                if (!err)
                        *(unsigned *)p = (unsigned)n;
                return err;
        case F_U64:
        case F_HEX:
                return parse_u64(v, f->type == F_HEX ? 16 : 10, UINT64_MAX, (uint64_t *)p);
        case F_YESNO:
                if (strcmp(v, "yes") && strcmp(v, "no"))
                        return -EINVAL;
                *(int *)p = !strcmp(v, "yes");
                return 0;
        case F_STR:
                if (strlen(v) >= f->size)
                        return -EINVAL;
                snprintf(p, f->size, "%s", strcmp(v, "-") ? v : ""); /* "-": empty */
                return 0;
        }
        return -EINVAL;
}

static int decode_record(const struct status_record *r, const char *kind, const struct field *f,
                         size_t nf, void *rec)
{
        size_t i;
        int err;

        if (!r->kind || strcmp(r->kind, kind))
                return -EINVAL;
        for (i = 0; i < nf; i++) {
                const char *v = status_record_get(r, f[i].key);

                if (!v)
                        return -ENOENT;
                err = decode_field(&f[i], v, (char *)rec + f[i].off);
                if (err)
                        return err;
        }
        return 0;
}

int status_record_daemon(const struct status_record *r, struct status_daemon *out)
{
        return decode_record(r, "daemon", daemon_fields, NFIELDS(daemon_fields), out);
}

int status_record_target(const struct status_record *r, struct status_target *out)
{
        return decode_record(r, "target", target_fields, NFIELDS(target_fields), out);
}

#define DIR_MODE  0755
#define FILE_MODE 0644

/* The directory of path (trusted_dir_open, created 0755, owner rwx kept so that writing
 * needs no capability) and the file's name in it. The descriptor or -errno. */
static int open_parent(const char *path, const char **name, char *why, size_t why_len)
{
        char dir[PATH_MAX];
        const char *slash = strrchr(path, '/');
        struct stat st;
        int dfd;

        if (!slash || !slash[1])
                return -EINVAL;
        if ((size_t)(slash - path) >= sizeof(dir))
                return -ENAMETOOLONG;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        dfd = trusted_dir_open(dir[0] ? dir : "/", DIR_MODE, why, why_len);
        if (dfd < 0)
                return dfd;
        if (!fstat(dfd, &st) && (st.st_mode & S_IRWXU) != S_IRWXU &&
            fchmod(dfd, (st.st_mode & 07777) | S_IRWXU)) {
                int err = -errno;

                close(dfd);
                return err;
        }
        *name = slash + 1;
        return dfd;
}

int status_file_check(const char *path, char *why, size_t why_len)
{
        const char *name;
        int dfd = open_parent(path, &name, why, why_len);

        if (dfd < 0)
                return dfd;
        close(dfd);
        return 0;
}

int status_file_write(const char *path, const char *text, size_t len)
{
        char tmp[NAME_MAX + 1];
        const char *name;
        int dfd, fd, err;

        dfd = open_parent(path, &name, NULL, 0);
        if (dfd < 0)
                return dfd;
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp)) {
                close(dfd);
                return -ENAMETOOLONG;
        }
        /* a temporary file left by a crash (the directory is ours alone: nothing else) */
        unlinkat(dfd, tmp, 0);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
        if (fd < 0) {
                err = -errno;
                close(dfd);
                return err;
        }
        err = write_all(fd, text, len);
        if (!err && fchmod(fd, FILE_MODE)) /* the umask applied to openat's mode */
                err = -errno;
        if (close(fd) && !err)
                err = -errno;
        if (!err && renameat(dfd, tmp, dfd, name))
                err = -errno;
        if (err)
                unlinkat(dfd, tmp, 0);
        close(dfd);
        return err;
}

void status_file_value(char *dst, size_t len, const char *s)
{
        size_t i;

        if (!len)
                return;
        for (i = 0; s && s[i] && i + 1 < len; i++) {
                unsigned char c = (unsigned char)s[i];

                dst[i] = c <= ' ' || c == '=' || c >= 0x7f ? '_' : (char)c;
        }
        dst[i] = '\0';
        if (!i && len > 1) {
                dst[0] = '-';
                dst[1] = '\0';
        }
}
