/* SPDX-License-Identifier: MIT */
/*
 * parser_chan.h — sending and receiving one parser_wire.h message on a SOCK_SEQPACKET socket:
 * head + payload in one datagram, at most one descriptor. The receiver checks everything
 * (magic, the datagram's size against the head's len and its buffer, descriptor count,
 * truncation) and closes any descriptor of a message it refuses. Never prints.
 */
#ifndef CTXPROF_PARSER_CHAN_H
#define CTXPROF_PARSER_CHAN_H

#include <stdint.h>

#include "util/parser_wire.h"

/* Sends head (its len and nfds are set here) + len payload bytes, with fd when fd >= 0.
 * 0 or -errno (-EMSGSIZE past PARSER_PAYLOAD_MAX). */
int parser_chan_send(int sock, struct parser_head *h, const void *payload, uint32_t len, int fd);
/* Waits at most timeout_ms (< 0: forever) for one message: head into *h, payload into buf (at
 * most cap bytes), its descriptor into *fd (-1 when none). 0, -ETIMEDOUT, -EPIPE (the peer
 * closed), -EPROTO (a message that breaks the framing), or -errno. */
int parser_chan_recv(int sock, struct parser_head *h, void *buf, uint32_t cap, int *fd,
                     int timeout_ms);

#endif
