/* sigguard.h - a system call of pincache's that writes or sizes a file
 * fails with an error, never with a signal that the program would die of.
 *
 * A write into a pipe nobody reads raises SIGPIPE; a write, ftruncate or
 * fallocate past RLIMIT_FSIZE raises SIGXFSZ.  Both terminate by default,
 * and the program, plain, may never have made such a call (a quiet program
 * whose stderr is a closed pipe; a job run under `ulimit -f`): pincache's
 * report line or memfd must not be what kills it.  Around such a call the
 * two are blocked on the calling thread, and one that the call raised
 * (EPIPE, EFBIG) is taken back; one pending before is left pending. */
#ifndef PC_UTIL_SIGGUARD_H
#define PC_UTIL_SIGGUARD_H
#include <signal.h>
#include <stdint.h>

struct pc_sigguard {
    sigset_t old;
    int had_pipe, had_xfsz;
    int on;
};

void pc_sigguard_begin(struct pc_sigguard *g);
/* err: the guarded call's errno, 0 when it succeeded. */
void pc_sigguard_end(struct pc_sigguard *g, int err);

/* May a file grow to size bytes under this process's RLIMIT_FSIZE? */
int pc_fsize_allows(uint64_t size);

#endif
