/* trace.h - PINCACHE_TRACE: a timeline of the interposed calls, one Chrome
 * Trace Event ("ph":"X") per call and thread, opened by Perfetto or
 * chrome://tracing.  Events go into a ring allocated once at start-up
 * (PINCACHE_TRACE_EVENTS of them; when full, the oldest are overwritten) and
 * the file is written at exit with write(2): no malloc, no stdio, no CUDA. */
#ifndef PC_TRACE_H
#define PC_TRACE_H
#include <stdint.h>

struct pc_call;

/* Allocate the ring when PINCACHE_TRACE names a file.  Returns 0 or -errno. */
int pc_trace_init(void);

/* Record a finished call (t1: its end).  Lock-free; a no-op without a ring. */
void pc_trace_add(const struct pc_call *c, uint64_t t1, int ok);

/* Write the trace file named by PINCACHE_TRACE (%p, %r, %h as for the
 * report).  At exit only; start_ns is the time origin. */
void pc_trace_write(int pid, uint64_t start_ns);

/* Write the events recorded so far to fd as one JSON document.  Returns 0 or
 * -errno.  Exposed for the tests. */
int pc_trace_emit_fd(int fd, int pid, uint64_t start_ns);

/* In a forked child: start an empty timeline (the ring memory is kept). */
void pc_trace_after_fork_child(void);

/* Tests: a ring of n events without options (n rounded up to a power of 2). */
int pc_trace_init_n(unsigned long n);

#endif
