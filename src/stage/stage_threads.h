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

struct pc_xfer {
    /* Set by pc_xfer_init, read-only while the transfer runs. */
    int to_slots;            /* 1: pageable -> slots (H2D), 0: slots -> pageable (D2H) */
    char *host;              /* the pageable side of the whole copy */
    size_t n, piece;         /* bytes; bytes per piece (the last may be shorter) */
    uint64_t nfull;          /* pieces at piece * k; a last piece split in two comes after them */
    size_t half;             /* bytes of the first half of that split piece (0: not split) */
    char *const *slot;       /* slot buffers, nslot of them */
    unsigned *left;          /* per slot: slices of its current piece not yet copied (atomic) */
    unsigned nslot, head, spp;   /* slots, slot of piece 0, slices per piece */
    int stream_stores;       /* H2D: fill the slots with non-temporal stores (set after init) */
    uint64_t npieces, nslices;
    /* Shared while running: atomics. */
    uint64_t next;           /* next slice to claim */
    uint64_t ready;          /* pieces [0, ready) may be copied */
    int stop;                /* set by pc_xfer_end: claim nothing more */
    /* A job that is not a copy (pc_xfer_run): fn(arg, i) replaces slice i's copy. */
    void (*fn)(void *arg, uint64_t i);
    void *arg;
};

/* Describe a transfer.  threads: participants the slicing is sized for.
 * Waits first for pool threads still leaving an earlier transfer (x may be
 * that one: pc_xfer_end). */
void pc_xfer_init(struct pc_xfer *x, int to_slots, char *host, size_t n, size_t piece,
                  char *const *slot, unsigned *left, unsigned nslot, unsigned head,
                  unsigned threads);

/* Pieces in a transfer of n bytes cut at piece.  A last piece of at least
 * PC_XFER_SPLIT_MIN is cut in two: after the caller returns, the program
 * still waits for the DMA of the last piece (a blocking .cuda() does), and a
 * half-size last piece halves that wait. */
#define PC_XFER_SPLIT_MIN (512u << 10)
uint64_t pc_xfer_count(size_t n, size_t piece);

static inline size_t pc_xfer_piece_off(const struct pc_xfer *x, uint64_t k)
{
    return k > x->nfull ? (size_t)x->nfull * x->piece + x->half : (size_t)k * x->piece;
}

static inline size_t pc_xfer_piece_len(const struct pc_xfer *x, uint64_t k)
{
    size_t end = k + 1 < x->npieces ? pc_xfer_piece_off(x, k + 1) : x->n;
    return end - pc_xfer_piece_off(x, k);
}

static inline unsigned pc_xfer_slot(const struct pc_xfer *x, uint64_t k)
{
    return (unsigned)((x->head + k) % x->nslot);
}

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

/* Run fn(arg, i) for every i in [0, n) once, on the pool's threads and the
 * caller, and return when all have returned.  The caller holds the staging
 * lock (one transfer or job at a time), as for a copy. */
void pc_xfer_run(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n);

/* Participants (pool threads + the caller), starting the threads on first
 * use: want <= 0 means min(16, CPUs).  Fixed after the first call.
 * linger_us: how long an idle pool thread spins for the next transfer before
 * it sleeps (0 to 10000; taken on every call). */
unsigned pc_xfer_threads(long want, long linger_us);
/* Start n detached threads running fn(NULL), every signal blocked in them;
 * the number started. */
unsigned pc_threads_start(void *(*fn)(void *), unsigned n, size_t stack);

/* CPUs this process may run on. */
unsigned pc_xfer_cpus(void);

/* Back off while waiting for someone else's progress (spin, then yield). */
void pc_xfer_relax(unsigned *spins);

/* In a forked child: the threads are gone; forget them without joining. */
void pc_xfer_after_fork_child(void);

#endif
