/* SPDX-License-Identifier: MIT */
/*
 * pctx_wire.c — encoding and checking a PARSER_PCTX answer (pctx_wire.h). Must never print,
 * read past the payload it is given, or let a string through that the in-process decode
 * would not have produced.
 */
#include "engine/pctx_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct writer {
        char *p;
        size_t used, cap;
        int short_;
};

static void put(struct writer *w, const void *b, size_t n)
{
        if (w->used + n > w->cap) {
                w->short_ = 1;
                return;
        }
        memcpy(w->p + w->used, b, n);
        w->used += n;
}

static void put_str(struct writer *w, const char *s, size_t max)
{
        uint16_t n = s ? (uint16_t)strnlen(s, max) : PCTX_WIRE_NULL;

        put(w, &n, sizeof(n));
        if (s)
                put(w, s, n);
}

uint32_t pctx_wire_encode(int err, const struct otel_pctx *pc, const struct otel_pctx_stats *st,
                          void *buf, size_t cap)
{
        struct writer w = {.p = buf, .cap = cap};
        unsigned nk = err ? 0 : pc->n_keys < OTEL_MAX_KEYS ? pc->n_keys : OTEL_MAX_KEYS;
        unsigned nr = err                                  ? 0
                      : pc->n_res < OTEL_PCTX_MAX_RESOURCE ? pc->n_res
                                                           : OTEL_PCTX_MAX_RESOURCE;
        struct pctx_resp_head h = {.err = err,
                                   .n_keys = (uint16_t)nk,
                                   .n_res = (uint16_t)nr,
                                   .service = PCTX_WIRE_NO_SVC,
                                   .too_deep = st->too_deep != 0,
                                   .bad_schema = st->bad_schema != 0,
                                   .bad_keys = (uint32_t)st->bad_keys};

        for (unsigned i = 0; i < nr; i++)
                if (pc->service_name == pc->res_values[i])
                        h.service = (uint16_t)i;
        put(&w, &h, sizeof(h));
        for (unsigned i = 0; i < nk; i++)
                put_str(&w, pc->keys[i], CTXPROF_LABEL_KEY_MAX);
        for (unsigned i = 0; i < nr; i++) {
                put_str(&w, pc->res_keys[i], CTXPROF_LABEL_KEY_MAX);
                put_str(&w, pc->res_values[i], OTEL_PCTX_VALUE_MAX);
        }
        return w.short_ ? 0 : (uint32_t)w.used;
}

struct reader {
        const char *p;
        size_t left;
};

/* The next string: 0 with *out malloc'ed (NULL for PCTX_WIRE_NULL when null_ok), -EPROTO,
 * -ENOMEM. At most max bytes, none of them NUL. */
static int take_str(struct reader *r, size_t max, int null_ok, char **out)
{
        uint16_t n;

        *out = NULL;
        if (r->left < sizeof(n))
                return -EPROTO;
        memcpy(&n, r->p, sizeof(n));
        r->p += sizeof(n);
        r->left -= sizeof(n);
        if (n == PCTX_WIRE_NULL)
                return null_ok ? 0 : -EPROTO;
        if (n > max || n > r->left || memchr(r->p, 0, n))
                return -EPROTO;
        if (!(*out = strndup(r->p, n)))
                return -ENOMEM;
        r->p += n;
        r->left -= n;
        return 0;
}

static int take_keys(struct reader *r, unsigned n, struct otel_pctx *pc)
{
        if (!n)
                return 0;
        if (!(pc->keys = calloc(n, sizeof(char *))))
                return -ENOMEM;
        pc->n_keys = n;
        for (unsigned i = 0; i < n; i++) {
                int err = take_str(r, CTXPROF_LABEL_KEY_MAX, 1, &pc->keys[i]);

                if (err)
                        return err;
                if (pc->keys[i] && !otel_pctx_key_ok(pc->keys[i]))
                        return -EPROTO;
        }
        return 0;
}

static int take_resource(struct reader *r, unsigned n, struct otel_pctx *pc)
{
        if (!n)
                return 0;
        pc->res_keys = calloc(n, sizeof(char *));
        pc->res_values = calloc(n, sizeof(char *));
        if (!pc->res_keys || !pc->res_values)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++) {
                int err = take_str(r, CTXPROF_LABEL_KEY_MAX, 0, &pc->res_keys[i]);

                if (!err)
                        err = take_str(r, OTEL_PCTX_VALUE_MAX, 0, &pc->res_values[i]);
                pc->n_res = i + 1; /* both freed by otel_pctx_clear from here on */
                if (err)
                        return err;
        }
        return 0;
}

/* The service index names a resource attribute the in-process decode would take. */
static int take_service(const struct pctx_resp_head *h, struct otel_pctx *pc)
{
        if (h->service == PCTX_WIRE_NO_SVC)
                return 0;
        if (h->service >= pc->n_res ||
            !otel_pctx_names_service(pc->res_keys[h->service], pc->res_values[h->service]))
                return -EPROTO;
        pc->service_name = pc->res_values[h->service];
        return 0;
}

int pctx_wire_decode(const void *buf, uint32_t len, struct otel_pctx *pc,
                     struct otel_pctx_stats *st)
{
        struct reader r = {.p = buf, .left = len};
        struct pctx_resp_head h;
        int err;

        memset(pc, 0, sizeof(*pc));
        if (len < sizeof(h))
                return -EPROTO;
        memcpy(&h, buf, sizeof(h));
        r.p += sizeof(h);
        r.left -= sizeof(h);
        if (h.n_keys > OTEL_MAX_KEYS || h.n_res > OTEL_PCTX_MAX_RESOURCE || h.too_deep > 1 ||
            h.bad_schema > 1 || h.bad_keys > OTEL_MAX_KEYS ||
            (h.err && (h.err != -EBADMSG && h.err != -ENOMEM)) || (h.err && (h.n_keys || h.n_res)))
                return -EPROTO;
        err = take_keys(&r, h.n_keys, pc);
        if (!err)
                err = take_resource(&r, h.n_res, pc);
        if (!err)
                err = take_service(&h, pc);
        if (!err && r.left)
                err = -EPROTO; /* bytes past the last string */
        if (err) {
                otel_pctx_clear(pc);
                return err;
        }
        st->too_deep += h.too_deep;
        st->bad_schema += h.bad_schema;
        st->bad_keys += h.bad_keys;
        if (h.err == -EBADMSG)
                st->decode_errors++;
        return h.err;
}
