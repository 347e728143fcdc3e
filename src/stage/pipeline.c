/* pipeline.c - the H2D and D2H pipelines of a staged copy.  The copy is
 * cut into pieces; the copy threads (stage_threads.c) move each piece
 * between the pageable buffer and a pinned ring slot while the DMA of the
 * previous piece runs.  Besides its DMAs a copy asks the runtime as little
 * as the pipeline needs (ring.h, checkpoints): an H2D one event record, and
 * one query per earlier copy whose slots it reuses; a D2H one record and one
 * wait a piece, for its copy-out. */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include "stage/pipeline.h"
#include "stage/ring.h"
#include "stage/share.h"
#include "stage/stage_threads.h"
#include "util/log.h"
#include "util/options.h"
#include "util/stats.h"

#define PC_STAGE_MIN_PIECE (256u << 10)

/* Queue the DMA of piece k of x, through its slot, on p's stream.  0: queued;
 * otherwise the runtime's or the driver's answer for this copy, as it came
 * in. */
static cudaError_t pc_dma(const struct pc_plan *p, struct pc_ring *r, const struct pc_xfer *x, uint64_t k)
{
    char *buf = r->slot[pc_xfer_slot(x, k)].buf, *dev = p->dev + pc_xfer_piece_off(x, k);

    return (cudaError_t)p->real(p->h2d ? dev : buf, p->h2d ? buf : dev, pc_xfer_piece_len(x, k),
                                p->h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, (void *)p->h,
                                PC_COPY_ASYNC);
}

/* Nothing to do for now: help the copy threads, or back off. */
static void pc_idle(struct pc_xfer *x, unsigned *spins)
{
    if (pc_xfer_help(x))
        *spins = 0;
    else
        pc_xfer_relax(spins);
}

/* --- the two pipelines.  Each returns the copy's result; *redo is where the
 * runtime must take over (n: nowhere), after an internal failure or, with
 * *elsewhere set, at a slot still busy with a DMA the copy may not wait for;
 * *used is how many slots the copy went through. --- */

/* An H2D copy records one checkpoint, after its last DMA, and one after
 * each piece whose slot it fills again itself (a copy of more pieces than
 * the ring has slots).  Pieces [cov, dma) are queued with none after them
 * yet.  The checkpoint: 0, or -1 (ring broken, *redo at cov: the runtime
 * copies those pieces again, after them in stream order). */
static int pc_h2d_checkpoint(struct pc_ring *r, const struct pc_plan *p, const struct pc_xfer *x,
                             uint64_t *cov, uint64_t dma, size_t *redo)
{
    cudaError_t err;

    if (*cov == dma)
        return 0;
    if (pc_ring_checkpoint(r, p, pc_xfer_slot(x, *cov), (unsigned)(dma - *cov), x->nslot, &err) != 0) {
        pc_clear_own_error();
        pc_ring_break(r, "cudaEventRecord", err);
        *redo = pc_xfer_piece_off(x, *cov);
        return -1;
    }
    *cov = dma;
    return 0;
}

static cudaError_t pc_run_h2d(struct pc_ring *r, const struct pc_plan *p, struct pc_xfer *x,
                              size_t *redo, int *elsewhere, uint64_t *used)
{
    uint64_t np = x->npieces, ready = 0, dma = 0, cov = 0, want;
    cudaError_t err = cudaSuccess;
    unsigned spins = 0;
    int rc;

    pc_xfer_begin(x);
    while (dma < np) {
        /* A filled piece goes to the DMA engine, in order. */
        if (dma < ready && pc_xfer_piece_done(x, dma)) {
            err = pc_dma(p, r, x, dma);
            if (err != cudaSuccess) {
                /* The runtime's answer for this copy.  Pieces queued
                 * before it have no checkpoint, and no call may follow
                 * (its error is the program's last): never use them again. */
                if (cov < dma)
                    pc_ring_break(r, "a staged DMA", err);
                break;
            }
            dma++;
            spins = 0;
            if ((dma == np || dma + x->nslot <= np) && pc_h2d_checkpoint(r, p, x, &cov, dma, redo) != 0)
                break;
            continue;
        }
        /* The next pieces may be filled once their slots' previous DMAs are
         * done: all that are, handed to the copy threads at once. */
        for (want = ready; want < np && want < dma + x->nslot; want++) {
            rc = pc_slot_free(p, r, pc_xfer_slot(x, want), pc_xfer_piece_off(x, want), dma == want, &err);
            if (rc == PC_SLOT_ELSEWHERE) {
                *elsewhere = 1;      /* every filled piece is queued (dma == ready) */
                *redo = pc_xfer_piece_off(x, dma);
                break;
            }
            if (rc < 0) {
                /* Ours, not the copy's (events lost to a device reset, or
                 * a sticky error the runtime will report itself). */
                pc_clear_own_error();
                pc_ring_break(r, "a staging event", err);
                err = cudaSuccess;
                *redo = pc_xfer_piece_off(x, dma);
                break;
            }
            if (rc == 0)
                break;
        }
        if (*redo < p->n) {
            if (!r->broken)
                pc_h2d_checkpoint(r, p, x, &cov, dma, redo);
            break;
        }
        if (want > ready) {
            pc_xfer_ready(x, ready = want);
            spins = 0;
            continue;
        }
        pc_idle(x, &spins);
    }
    pc_xfer_end(x, dma == np);   /* every piece filled: the program's memory is not touched again */
    *used = ready;
    /* The last checkpoint covers every DMA (one stream). */
    if (err == cudaSuccess && *redo == p->n && p->sync && dma > 0 && pc_rt_sync_h2d_waits_dma(p))
        pc_slot_wait(r, pc_xfer_slot(x, dma - 1), &err);
    return err;
}

static cudaError_t pc_run_d2h(struct pc_ring *r, const struct pc_plan *p, struct pc_xfer *x,
                              size_t *redo, int *elsewhere, uint64_t *used)
{
    uint64_t np = x->npieces, issued = 0, ready = 0, retired = 0;
    cudaError_t err = cudaSuccess;
    unsigned spins = 0;
    int rc;

    pc_xfer_begin(x);
    while (retired < np) {
        /* Pieces copied out free their slots. */
        if (retired < ready && pc_xfer_piece_done(x, retired)) {
            retired++;
            spins = 0;
            continue;
        }
        /* DMA into every free slot, up to a ring ahead of the copy-out; a
         * checkpoint after each piece tells when it has landed. */
        if (issued < np && issued < retired + x->nslot) {
            unsigned i = pc_xfer_slot(x, issued);
            rc = pc_slot_free(p, r, i, p->n, retired == ready && ready == issued, &err);
            if (rc == PC_SLOT_ELSEWHERE) {
                *elsewhere = 1;      /* every piece issued is copied out */
                *redo = pc_xfer_piece_off(x, retired);
                break;
            }
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                err = pc_dma(p, r, x, issued);
                if (err != cudaSuccess)
                    break;   /* the runtime's answer for this copy */
                if (pc_ring_checkpoint(r, p, i, 1, x->nslot, &err) != 0)
                    goto internal;
                issued++;
                spins = 0;
                continue;
            }
        }
        /* Copy out what has landed; with nothing left to copy, wait for
         * the next piece to land (one question a piece, no polling). */
        if (pc_xfer_help(x)) {
            spins = 0;
            continue;
        }
        if (ready < issued) {
            rc = pc_slot_free(p, r, pc_xfer_slot(x, ready), p->n, 1, &err);
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                pc_xfer_ready(x, ++ready);
                spins = 0;
                continue;
            }
        }
        pc_xfer_relax(&spins);
    }
    pc_xfer_end(x, retired == np);
    *used = issued;
    return err;

internal:
    /* An event failed: no slot in flight can be trusted.  The runtime
     * copies everything not yet copied out (again, for pieces in flight). */
    pc_xfer_end(x, 0);
    pc_clear_own_error();
    pc_ring_break(r, "a staging event", err);
    *redo = pc_xfer_piece_off(x, retired);
    *used = issued;
    return cudaSuccess;
}

/* Pieces of at least 256K, about PINCACHE_STAGE_PIECES to a copy so that
 * filling overlaps the DMA from early on, at most a chunk.  Measured on the
 * H200 with PyTorch's 2.5 MiB pageable .cuda() (docs/pytorch.md): 4 pieces
 * 70 ms for 512 copies, 16 pieces 79, 8 pieces 94 to 135. */
static size_t pc_piece_size(size_t n, size_t chunk)
{
    size_t piece = ((n / (size_t)pc_opt.stage_pieces) + 65535) & ~(size_t)65535;

    if (piece < PC_STAGE_MIN_PIECE)
        piece = PC_STAGE_MIN_PIECE;
    return piece < chunk ? piece : chunk;
}

/* The transfer of the copy under way (pc_rings.lock): static, as pool
 * threads may still read it after the copy returns (pc_xfer_end). */
static struct pc_xfer pc_copy_xfer;

int pc_pipeline_run(struct pc_plan *p, cudaError_t *result, size_t *redo, int *elsewhere)
{
    struct pc_ring *r = pc_ring_get(p->devno);
    struct pc_xfer *x = &pc_copy_xfer;
    uint64_t used = 0;
    size_t piece;
    uint64_t npieces, want;
    unsigned nslot, threads, chunks, old;

    if (r)
        r = pc_ring_check(r, p->devno);
    if (!r || r->broken)
        return 0;
    pc_share_copy(p->devno, &threads, &chunks);
    if (!chunks || chunks > r->nslot)
        chunks = r->nslot;
    piece = pc_piece_size(p->n, r->chunk);
    npieces = pc_xfer_count(p->n, piece);
    /* An async H2D returns with its DMAs queued, not done.  One that finds
     * the least recently used chunk still in flight at its start (the
     * copies come back to back) grows the ring to room for two copies, and
     * starts in the new chunks: otherwise it would wait for the copy before
     * (pc_rt_held_for_stream) or leave its rest to the runtime (an H100,
     * PyTorch's non-blocking .cuda() of 2.5 MiB rows: 1,189 of 2,560
     * copies at 8.6 GB/s).  A blocking loop finds it done and keeps one
     * copy's chunks. */
    want = npieces;
    old = r->nalloc;
    if (p->h2d && !p->sync && old >= npieces && old < 2 * npieces) {
        cudaError_t e;
        int rc = pc_slot_free(p, r, r->head, 0, 0, &e);   /* asks, never waits */

        if (rc == 0)
            want = 2 * npieces;
        else if (rc < 0)
            pc_clear_own_error();   /* the copy's own question finds it again */
    }
    nslot = pc_ring_grow(r, want < chunks ? (unsigned)want : chunks);
    if (nslot > chunks)
        nslot = chunks;      /* chunks made while this process's share was larger stay idle */
    if (nslot == 0)
        return 0;
    if (want > npieces && nslot > old)
        r->head = old;
    r->copy_seq = r->seq;
    pc_xfer_quiet();         /* the last copy's threads may still be reading x */
    pc_xfer_init(x, p->h2d, p->host, p->n, piece, r->bufs, r->left, nslot, r->head, threads);
    x->stream_stores = pc_opt.stage_nt && p->n <= pc_opt.stage_nt_max;
    *redo = p->n;
    *result = p->h2d ? pc_run_h2d(r, p, x, redo, elsewhere, &used)
                     : pc_run_d2h(r, p, x, redo, elsewhere, &used);
    r->head = (unsigned)((r->head + used) % nslot);
    return !(*elsewhere && *redo == 0);  /* nothing moved: the runtime does it all */
}
