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

/* Copy threads that fall behind.  A pool thread descheduled in the middle
 * of its slice (more runnable threads than CPUs: PyTorch's OpenMP threads
 * spin on every CPU for a while after a parallel operation) holds its
 * piece's DMA, and the caller cannot take the slice over: the thread may
 * still be reading the program's memory, which the copy must not return
 * before.  So later transfers hand out fewer seats: a transfer that stalled
 * halves them, and a run of clean ones gives one back, the run twice as
 * long after each stall and half as long after each seat given back
 * (4 to 1024 transfers).  Not for pc_xfer_run's jobs. */
/* The caller's own help (pc_xfer_help), the slice timed for pc_xfer_behind. */
int pc_xfer_help_self(struct pc_xfer *x);
/* The caller found nothing to claim while piece k (every slice of it
 * claimed) is not done.  Once it has waited for k longer than
 * PC_XFER_STALL_NS, or 8 times the longest slice it copied itself, the
 * transfer counts as stalled (x->stalled), and pc_xfer_end takes seats
 * from the next ones. */
void pc_xfer_behind(struct pc_xfer *x, uint64_t k);
#define PC_XFER_STALL_NS 250000
/* Seats the next transfer may hand to pool threads (UINT_MAX: no cap). */
unsigned pc_xfer_cap(void);

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
