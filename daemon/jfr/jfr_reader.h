/* SPDX-License-Identifier: MIT */
/*
 * jfr_reader.h — a small JFR (1.x/2.x) reader, driven by each chunk's metadata: chunk
 * headers, the type system, every constant pool of the checkpoint chain, and events decoded
 * field by field into generic values. Built for hostile input: every read is bounded, depth
 * and sizes are capped, corrupt data gives -EBADMSG (never a crash). Never prints.
 * Used by `ctxprof report` and the tests. Not thread-safe.
 *
 *   jfr_reader_open -> while (jfr_reader_next_chunk() == 1)
 *                          while (jfr_reader_next_event(&ev) == 1) ... jfr_value_field(...)
 */
#ifndef CTXPROF_JFR_READER_H
#define CTXPROF_JFR_READER_H

#include <stddef.h>
#include <stdint.h>

enum jfr_vkind {
        JFR_V_NULL,
        JFR_V_INT, /* boolean, byte, short, char, int, long: raw 64 bits in .u */
        JFR_V_DOUBLE,
        JFR_V_STRING,
        JFR_V_OBJECT, /* .items[n] = fields in metadata order */
        JFR_V_ARRAY,  /* .items[n] = elements */
        JFR_V_REF,    /* constant-pool reference: .u = key, .type = pool type */
};

struct jfr_type;

struct jfr_value {
        uint8_t kind;
        uint32_t n;
        const struct jfr_type *type;
        union {
                uint64_t u;
                double d;
                const char *s; /* NUL-terminated UTF-8 (not validated) */
                struct jfr_value *items;
        };
};

struct jfr_field {
        const char *name;
        const char *label; /* jdk.jfr.Label value or NULL */
        const struct jfr_type *type;
        int constant_pool, array;
};

struct jfr_type {
        uint64_t id;
        const char *name;
        const char *super_type; /* NULL if none */
        int simple;
        struct jfr_field *fields;
        uint32_t nfields;
        int primitive; /* internal: how the reader decodes it */
};

struct jfr_chunk_info {
        uint64_t offset, size; /* in the file */
        uint64_t start_nanos, duration_nanos, start_ticks, ticks_per_second;
        uint64_t metadata_id;
        uint64_t max_pool_key; /* largest constant-pool key of any type in the chunk */
        uint16_t major, minor;
};

struct jfr_event {
        const struct jfr_type *type;
        uint64_t start_ticks;
        const struct jfr_value *value; /* JFR_V_OBJECT with type->nfields items */
        uint64_t offset;               /* in the file */
};

struct jfr_reader;

/* Read the whole file into memory (at most 1 GiB). */
int jfr_reader_open(const char *path, struct jfr_reader **out);
/* Same over a caller-owned buffer (must outlive the reader). */
int jfr_reader_open_mem(const void *data, size_t len, struct jfr_reader **out);
void jfr_reader_close(struct jfr_reader *r);

/* Load the next chunk (metadata + constant pools). 1 = loaded, 0 = no more chunks,
 * -EBADMSG = the chunk is corrupt or incomplete (reading stops there). */
int jfr_reader_next_chunk(struct jfr_reader *r);
const struct jfr_chunk_info *jfr_reader_chunk(const struct jfr_reader *r);
/* Bytes after the last complete chunk (a partial chunk or garbage). Valid once next_chunk
 * returned 0 or an error. */
uint64_t jfr_reader_trailing_bytes(const struct jfr_reader *r);

/* Next event of a type declared in the metadata (metadata/checkpoint/unknown ids skipped).
 * 1 = *ev filled (valid until the next call), 0 = end of chunk, -EBADMSG corrupt event
 * framing (the rest of the chunk is skipped). An event whose fields do not decode is
 * skipped and counted in jfr_reader_bad_events. */
int jfr_reader_next_event(struct jfr_reader *r, struct jfr_event *ev);
uint64_t jfr_reader_bad_events(const struct jfr_reader *r);

const struct jfr_type *jfr_reader_type(const struct jfr_reader *r, const char *name);

/* Value access. Constant-pool references and simple types (one-field wrappers) are
 * resolved; NULL when missing. */
const struct jfr_value *jfr_value_resolve(const struct jfr_reader *r, const struct jfr_value *v);
const struct jfr_value *jfr_value_field(const struct jfr_reader *r, const struct jfr_value *obj,
                                        const char *name);
/* String of a (resolved) value; NULL if it is not a string. */
const char *jfr_value_str(const struct jfr_reader *r, const struct jfr_value *v);
/* Integer of a (resolved) value: 0 ok, -EINVAL if not an integer. */
int jfr_value_u64(const struct jfr_reader *r, const struct jfr_value *v, uint64_t *out);

#endif
