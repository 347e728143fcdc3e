/* xfer.h - one transfer of staging (struct pc_xfer): how a copy is cut into
 * pieces and slices, and the copying of one slice (xfer.c).  No threads and
 * no CUDA here: stage_threads.h hands the slices out. */
#ifndef PC_STAGE_XFER_H
#define PC_STAGE_XFER_H
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
    unsigned seats;          /* pool threads that may still join (threads - 1 at init): the
                                node's share of copy threads (share.c) caps a transfer's helpers */
    /* A job that is not a copy (pc_xfer_run): fn(arg, i) replaces slice i's copy. */
    void (*fn)(void *arg, uint64_t i);
    void *arg;
};

/* Describe a transfer.  threads: participants the slicing is sized for, and
 * the most that work on it (the caller and threads - 1 pool threads).
 * The caller waits first for pool threads still leaving an earlier
 * transfer, which may be x (stage_threads.h: pc_xfer_quiet, pc_xfer_end). */
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

/* Copy slice i (claimed by the calling thread) and count it done in its
 * slot's counter (a release: whoever sees the count reach 0 sees the bytes). */
void pc_xfer_copy_slice(struct pc_xfer *x, uint64_t i);

#endif
