/* xfer_help.h - jobs that are not copies (a fast block's pre-fault) on the
 * copy threads (stage_threads.h), and on helpers beyond the pool: threads of
 * their own, parked between jobs, that no copy wakes. */
#ifndef PC_XFER_HELP_H
#define PC_XFER_HELP_H
#include <stdint.h>

/* Run fn(arg, i) for every i in [0, n) once, on the caller, at most
 * threads - 1 of the pool's threads and at most extra helpers beyond the
 * pool (as many as the task limits spare), and return when all have
 * returned and no helper is left on the job.  The caller holds the staging
 * lock (one transfer or job at a time), as for a copy. */
void pc_xfer_run(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, unsigned threads, unsigned extra);

/* After a fork, in the child: the helpers are gone; the next job that
 * wants them starts them again. */
void pc_xfer_extra_after_fork_child(void);

#endif
