/*
 * sampler_tls.h — the sampler's one seam to TLS location: fills the BPF map value for a
 * process. Delegates to daemon/tls_locate.c (branch tlsloc) when present; until then a
 * private fallback handles only the common case of both variables defined in the main
 * executable (static TLS from PT_TLS). Never prints.
 */
#ifndef CTXPROF_SAMPLER_TLS_H
#define CTXPROF_SAMPLER_TLS_H

#include <sys/types.h>

#include "ctxprof/tls_target.h"

/* Same contract as tls_locate(): 0 = filled (a variable not found has mode NONE), -EAGAIN =
 * not relocated yet, -ESRCH = gone, other -errno. */
int sampler_tls_locate(pid_t pid, struct ctxprof_tls_target *out);

#endif
