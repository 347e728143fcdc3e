/* pipeline.c - the H2D and D2H pipelines of a staged copy.  The copy is
 * cut into pieces; the copy threads (stage_threads.c) move each piece
 * between the pageable buffer and a pinned ring slot while the DMA of the
 * previous piece runs. */
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

/* Queue one piece's DMA on p's stream, and slot s's event after it.
 * 0: queued; 1: the DMA failed (*err is the runtime's or the driver's
 * answer for this copy, as it came in); -1: the record failed (*err): the piece is queued, but when it is
 * done cannot be told. */
static int pc_dma(const struct pc_plan *p, struct pc_slot *s, void *to, const void *from, size_t len,
                  cudaError_t *err)
{
    *err = (cudaError_t)p->real(to, from, len, p->h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                (void *)p->h, PC_COPY_ASYNC);
    if (*err != cudaSuccess)
        return 1;
    *err = PC_CALL_REAL(cudaEventRecord, s->ev, p->h);
    if (*err != cudaSuccess)
        return -1;
    s->pending = 1;
    s->on = p->h;
    s->by = pthread_self();
    return 0;
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

static cudaError_t pc_run_h2d(struct pc_ring *r, const struct pc_plan *p, struct pc_xfer *x,
                              size_t *redo, int *elsewhere, uint64_t *used)
{
    uint64_t np = x->npieces, ready = 0, dma = 0;
    cudaError_t err = cudaSuccess;
    unsigned spins = 0;
    int rc;

    pc_xfer_begin(x);
    while (dma < np) {
        /* A filled piece goes to the DMA engine, in order. */
        if (dma < ready && pc_xfer_piece_done(x, dma)) {
            struct pc_slot *s = &r->slot[pc_xfer_slot(x, dma)];
            size_t off = pc_xfer_piece_off(x, dma);

            rc = pc_dma(p, s, p->dev + off, s->buf, pc_xfer_piece_len(x, dma), &err);
            if (rc > 0)
                break;       /* the runtime's answer for this copy */
            if (rc < 0) {
                /* Queued, but we cannot tell when it is done: the runtime
                 * redoes this piece and the rest, after it in stream order. */
                pc_clear_own_error();
                pc_ring_break(r, "cudaEventRecord", err);
                err = cudaSuccess;
                *redo = off;
                break;
            }
            dma++;
            spins = 0;
            continue;
        }
        /* The next piece may be filled once its slot's previous DMA is done. */
        if (ready < np && ready < dma + x->nslot) {
            rc = pc_slot_free(p, &r->slot[pc_xfer_slot(x, ready)], pc_xfer_piece_off(x, ready),
                              dma == ready, &err);
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
            if (rc > 0) {
                pc_xfer_ready(x, ++ready);
                spins = 0;
                continue;
            }
        }
        pc_idle(x, &spins);
    }
    pc_xfer_end(x);
    *used = ready;
    /* The last DMA covers the others (one stream). */
    if (err == cudaSuccess && *redo == p->n && p->sync && dma > 0 && pc_rt_sync_h2d_waits_dma(p)) {
        struct pc_slot *s = &r->slot[pc_xfer_slot(x, dma - 1)];
        uint64_t t0 = pc_now_ns();
        err = PC_CALL_REAL(cudaEventSynchronize, s->ev);
        PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
        if (err == cudaSuccess)
            s->pending = 0;
    }
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
        /* DMA into every free slot, up to a ring ahead of the copy-out. */
        if (issued < np && issued < retired + x->nslot) {
            struct pc_slot *s = &r->slot[pc_xfer_slot(x, issued)];
            rc = pc_slot_free(p, s, p->n, retired == ready && ready == issued, &err);
            if (rc == PC_SLOT_ELSEWHERE) {
                *elsewhere = 1;      /* every piece issued is copied out */
                *redo = pc_xfer_piece_off(x, retired);
                break;
            }
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                rc = pc_dma(p, s, s->buf, p->dev + pc_xfer_piece_off(x, issued),
                            pc_xfer_piece_len(x, issued), &err);
                if (rc > 0)
                    break;   /* the runtime's answer for this copy */
                if (rc < 0)
                    goto internal;
                issued++;
                spins = 0;
                continue;
            }
        }
        /* A piece whose DMA has landed may be copied out. */
        if (ready < issued) {
            rc = pc_slot_free(p, &r->slot[pc_xfer_slot(x, ready)], p->n, retired == ready, &err);
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                pc_xfer_ready(x, ++ready);
                spins = 0;
                continue;
            }
        }
        pc_idle(x, &spins);
    }
    pc_xfer_end(x);
    *used = issued;
    return err;

internal:
    /* An event failed: no slot in flight can be trusted.  The runtime
     * copies everything not yet copied out (again, for pieces in flight). */
    pc_xfer_end(x);
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

int pc_pipeline_run(struct pc_plan *p, cudaError_t *result, size_t *redo, int *elsewhere)
{
    struct pc_ring *r = pc_ring_get(p->devno);
    struct pc_xfer x;
    uint64_t used = 0;
    size_t piece;
    uint64_t npieces;
    unsigned nslot, threads, chunks;

    if (r)
        r = pc_ring_check(r, p->devno);
    if (!r || r->broken)
        return 0;
    pc_share_copy(p->devno, &threads, &chunks);
    if (!chunks || chunks > r->nslot)
        chunks = r->nslot;
    piece = pc_piece_size(p->n, r->chunk);
    npieces = pc_xfer_count(p->n, piece);
    nslot = pc_ring_grow(r, npieces < chunks ? (unsigned)npieces : chunks);
    if (nslot > chunks)
        nslot = chunks;      /* chunks made while this process's share was larger stay idle */
    if (nslot == 0)
        return 0;
    pc_xfer_init(&x, p->h2d, p->host, p->n, piece, r->bufs, r->left, nslot, r->head, threads);
    x.stream_stores = pc_opt.stage_nt && p->n <= pc_opt.stage_nt_max;
    *redo = p->n;
    *result = p->h2d ? pc_run_h2d(r, p, &x, redo, elsewhere, &used)
                     : pc_run_d2h(r, p, &x, redo, elsewhere, &used);
    r->head = (unsigned)((r->head + used) % nslot);
    return !(*elsewhere && *redo == 0);  /* nothing moved: the runtime does it all */
}
