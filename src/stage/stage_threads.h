/* stage_threads.h - the persistent copy threads behind pageable-copy staging.
 *
 * No CUDA here.  A transfer (struct pc_xfer) moves n bytes between pageable
 * memory and a ring of slots, piece k through slot (head + k) % nslot.  Each
 * piece is cut into slices that the pool's threads and the calling thread
 * claim one at a time.  The caller owns the order: it says which pieces may
 * be copied (pc_xfer_ready: the slot is free, or its DMA has landed) and
 * watches pieces finish (pc_xfer_piece_done) to start or retire their DMA.
 * One transfer runs at a time (the caller holds the staging lock). */
#ifndef PC_STAGE_THREADS_H
#define PC_STAGE_THREADS_H
#include <stddef.h>
#include <stdint.h>
#include "stage/xfer.h"

/* Hand the transfer to the pool's threads (none when there is one participant). */
void pc_xfer_begin(struct pc_xfer *x);
/* Allow pieces [.., ready) to be copied.  Piece k may be made ready only once
 * piece k - nslot is done (its slot's counter is reused). */
void pc_xfer_ready(struct pc_xfer *x, uint64_t ready);
/* Copy one claimable slice on the calling thread.  1 if it did, 0 if none. */
int pc_xfer_help(struct pc_xfer *x);
/* Have all slices of piece k (already made ready) been copied? */
int pc_xfer_piece_done(const struct pc_xfer *x, uint64_t k);
/* Stop the transfer and wait until no pool thread touches it (or the memory
 * it names) any more.  Required before x goes out of scope, even on error.
 * done: every piece is done, so no slice is left to claim and a pool
 * thread still on its way out reads x and nothing else: return at once (a
 * copy need not wait for a thread the scheduler has put aside), and leave
 * x as it is until the next pc_xfer_init, which waits for such threads
 * (static storage, one transfer at a time). */
void pc_xfer_end(struct pc_xfer *x, int done);
/* Wait until no pool thread is inside a transfer: before pc_xfer_init. */
void pc_xfer_quiet(void);

/* Participants (pool threads + the caller), starting threads until there
 * are want of them: want <= 0 means min(16, CPUs).  The pool grows, never
 * shrinks: a transfer takes at most its own count of them (pc_xfer_init's
 * threads: its seats), the others sleep, and a thread that had no seat in
 * the last transfer does not linger.  A size that could not be made is not
 * tried again.  linger_us: how long an idle pool thread spins for the next
 * transfer before it sleeps (0 to 10000; taken on every call). */
unsigned pc_xfer_threads(long want, long linger_us);
/* Start n detached threads running fn(NULL), every signal blocked in them
 * but those a fault raises (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
 * SIGSYS); the number started: fewer, down to none, where a task limit
 * (pids.max, RLIMIT_NPROC) leaves little (util/limits.h), or where one
 * refuses a thread.  errno is left as it was. */
unsigned pc_threads_start(void *(*fn)(void *), unsigned n, size_t stack);
/* The copy threads' stack size. */
#define PC_XFER_STACK (256u << 10)

/* CPUs this process may run on. */
unsigned pc_xfer_cpus(void);

/* Back off while waiting for someone else's progress (spin, then yield). */
void pc_xfer_relax(unsigned *spins);

/* In a forked child: the threads are gone; forget them without joining. */
void pc_xfer_after_fork_child(void);

#endif
