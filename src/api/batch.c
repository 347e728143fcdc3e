/* batch.c - batched copies (cudaMemcpyBatchAsync, cuMemcpyBatchAsync and
 * their 3D forms): each operand counted as one copy, classified once like a
 * single 1D copy, the stream seen by the fences as any async copy's.  With
 * staging on (cache mode), the pageable operands that may be staged are
 * taken out of the batch, in index order, and made as single async copies
 * on the batch's stream through the copy policy (copy.c's pc_copy_run, in
 * the batch's own flavour); the rest goes to the real call as a smaller
 * batch.
 *
 * A batch's copies have no order among themselves (cuda.h), so the staged
 * ones may come first.  Which operands may be staged (srcAccessOrder):
 *   - DuringApiCall, Any: the source may be read at the call, which staging
 *     does;
 *   - Stream: the runtime waits for the stream's earlier work, then reads a
 *     pageable source (measured, dev/probe/batch.cu): such an H2D operand
 *     stays in the real batch (staging it would need cudaMemcpy's wait
 *     first);
 *   - D2H into pageable memory: the runtime returns once the data is there
 *     under DuringApiCall only, at once under Stream and Any (measured); a
 *     staged copy returns once the data is there, so only DuringApiCall's
 *     are staged.
 * The runtime reads a large pageable source under DuringApiCall or Any when
 * its copy runs, after the call (16 MiB: measured); staging reads it at
 * the call, which both orders allow.
 * Anything the runtime would reject goes whole to the real call first, so
 * that it gives its own error and no operand has moved. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include "api/batch.h"
#include "api/copy.h"
#include "api/flavour.h"
#include "api/streams.h"
#include "core/cache.h"
#include "core/fence.h"
#include "diag/diag.h"
#include "real/drv_ext.h"
#include "real/real.h"
#include "stage/stage.h"
#include "util/options.h"
#include "util/state.h"
#include "util/stats.h"

_Static_assert(sizeof(struct cudaMemcpyAttributes) == sizeof(CUmemcpyAttributes) &&
               offsetof(struct cudaMemcpyAttributes, srcAccessOrder) == offsetof(CUmemcpyAttributes, srcAccessOrder) &&
               offsetof(struct cudaMemcpyAttributes, flags) == offsetof(CUmemcpyAttributes, flags) &&
               (int)cudaMemcpySrcAccessOrderStream == (int)CU_MEMCPY_SRC_ACCESS_ORDER_STREAM &&
               (int)cudaMemcpySrcAccessOrderAny == (int)CU_MEMCPY_SRC_ACCESS_ORDER_ANY,
               "runtime and driver share the batch attributes");

/* --- the real calls --- */

/* The real batch call of b's ABI over these arrays. */
static int pc_batch_real(const struct pc_batch *b, const void *dsts, const void *srcs, const size_t *sizes,
                         size_t count, void *attrs, size_t *idxs, size_t nattrs, size_t *fail)
{
    if (b->drv) {
        CUdeviceptr *d = (CUdeviceptr *)dsts, *s = (CUdeviceptr *)srcs;
        size_t *n = (size_t *)sizes;
        CUmemcpyAttributes *a = attrs;
        CUstream q = b->stream;

        if (b->has_fail)
            return b->ptsz ? PC_CALL_DRV(cuMemcpyBatchAsync_ptsz, d, s, n, count, a, idxs, nattrs, fail, q)
                           : PC_CALL_DRV(cuMemcpyBatchAsync, d, s, n, count, a, idxs, nattrs, fail, q);
        return b->ptsz ? PC_CALL_DRV(cuMemcpyBatchAsync_v2_ptsz, d, s, n, count, a, idxs, nattrs, q)
                       : PC_CALL_DRV(cuMemcpyBatchAsync_v2, d, s, n, count, a, idxs, nattrs, q);
    }
    if (b->has_fail) {       /* libcudart.so.12's ABI under the same names */
        pc_cudaMemcpyBatchAsync12_t *f = (pc_cudaMemcpyBatchAsync12_t *)(b->ptsz ? (void *)PC_REAL(cudaMemcpyBatchAsync_ptsz)
                                                                                 : (void *)PC_REAL(cudaMemcpyBatchAsync));
        return f ? f(dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, b->stream) : cudaErrorInitializationError;
    }
    return b->ptsz ? PC_CALL_REAL(cudaMemcpyBatchAsync_ptsz, dsts, srcs, sizes, count, attrs, idxs, nattrs, b->stream)
                   : PC_CALL_REAL(cudaMemcpyBatchAsync, dsts, srcs, sizes, count, attrs, idxs, nattrs, b->stream);
}

static int pc_batch_real_all(const struct pc_batch *b)
{
    return pc_batch_real(b, b->dsts, b->srcs, b->sizes, b->count, b->attrs, b->attrsIdxs, b->numAttrs,
                         b->failIdx);
}

/* --- reading the arguments --- */

static void *pc_batch_ptr(const struct pc_batch *b, const void *arr, size_t i)
{
    return b->drv ? (void *)(uintptr_t)((const CUdeviceptr *)arr)[i] : ((void *const *)arr)[i];
}

static const CUmemcpyAttributes *pc_batch_attr(const struct pc_batch *b, size_t k)
{
    return (const CUmemcpyAttributes *)b->attrs + k;
}

/* The legacy stream, which a batch may not use (1).  13.0's per-thread
 * forms refuse stream 0 too, the driver's (measured, H200) and the
 * runtime's cudaMemcpyBatchAsync_ptsz (fuzzer seeds 7205, 7310 and 7397 on
 * an H100, runtime 13.0: docs/runtime-facts.md); 12.8's driver forms take
 * it for the per-thread stream, and so, unmeasured, does the runtime of
 * the 12.x ABI here (has_fail). */
static int pc_batch_legacy_stream(const struct pc_batch *b)
{
    if (b->drv)
        return b->stream == CU_STREAM_LEGACY || (!b->stream && (!b->ptsz || !b->has_fail));
    return b->stream == cudaStreamLegacy || (!b->stream && (!b->ptsz || !b->has_fail));
}

/* Would the runtime accept the batch's arguments (cuda.h's rules)?  CUDA-
 * free; anything doubtful is "no": the real call then judges it whole. */
static int pc_batch_valid(const struct pc_batch *b)
{
    if (!b->count || !b->dsts || !b->srcs || !b->sizes || !b->attrs || !b->attrsIdxs)
        return 0;
    if (!b->numAttrs || b->numAttrs > b->count || b->attrsIdxs[0] != 0 || (b->has_fail && !b->failIdx))
        return 0;
    if (b->attrsIdxs[b->numAttrs - 1] >= b->count || pc_batch_legacy_stream(b))
        return 0;
    for (size_t k = 0; k < b->numAttrs; k++) {
        const CUmemcpyAttributes *a = pc_batch_attr(b, k);
        if (k && b->attrsIdxs[k] <= b->attrsIdxs[k - 1])
            return 0;
        if (a->srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM || a->srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY ||
            (a->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE))
            return 0;
    }
    for (size_t i = 0; i < b->count; i++)
        if (!b->sizes[i] || !pc_batch_ptr(b, b->dsts, i) || !pc_batch_ptr(b, b->srcs, i))
            return 0;
    return 1;
}

/* Is the batch's stream capturing (or the question refused)?  Then nothing
 * is staged: a graph cannot hold a staging step. */
static int pc_batch_capturing(const struct pc_batch *b)
{
    if (pc_fence_capturing() > 0)
        return 1;
    if (b->drv) {
        CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
        CUresult r = b->ptsz ? PC_CALL_DRV(cuStreamIsCapturing_ptsz, b->stream, &st)
                             : PC_CALL_DRV(cuStreamIsCapturing, b->stream, &st);
        return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
    }
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaStream_t q = b->ptsz && !b->stream ? cudaStreamPerThread : b->stream;
    if (PC_CALL_REAL(cudaStreamIsCapturing, q, &cs) != cudaSuccess) {
        PC_CALL_REAL(cudaGetLastError);   /* ours: nothing was pending */
        return 1;
    }
    return cs != cudaStreamCaptureStatusNone;
}

/* --- the operands --- */

/* Operand i as a single async copy on the batch's stream, classified once
 * when clean (no error pending): its direction from the pointers. */
static void pc_batch_operand(const struct pc_batch *b, size_t i, int clean, struct pc_copy *c)
{
    memset(c, 0, sizeof *c);
    c->dst = pc_batch_ptr(b, b->dsts, i);
    c->src = pc_batch_ptr(b, b->srcs, i);
    c->n = b->sizes[i];
    c->kind = cudaMemcpyDefault;
    c->stream = b->stream;
    c->how = b->ptsz ? PC_COPY_ASYNC_PTSZ : PC_COPY_ASYNC;
    c->s.p = c->src;
    c->d.p = c->dst;
    c->s.cached = pc_cache_owns(c->src);
    c->d.cached = pc_cache_owns(c->dst);
    if (!clean)
        return;
    c->clean = 1;
    c->known = 1;
    if (pc_mem_is_host(pc_mem_of(&c->s)) && pc_mem_of(&c->d) == PC_MEM_DEVICE)
        c->kind = cudaMemcpyHostToDevice;
    else if (c->s.kind == PC_MEM_DEVICE && pc_mem_is_host(pc_mem_of(&c->d)))
        c->kind = cudaMemcpyDeviceToHost;
}

/* May operand c, under attributes a, be made as a staged single copy? */
static int pc_batch_stageable(const struct pc_copy *c, const CUmemcpyAttributes *a)
{
    if (!c->clean || !pc_stage_considers(c->n))
        return 0;
    if (c->kind == cudaMemcpyDeviceToHost)      /* the runtime returns at once under Stream and Any */
        return c->d.kind == PC_MEM_PAGEABLE && a->srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL &&
               pc_stage_on_device(c->s.device);
    if (c->kind != cudaMemcpyHostToDevice || c->s.kind != PC_MEM_PAGEABLE)
        return 0;
    return a->srcAccessOrder != CU_MEMCPY_SRC_ACCESS_ORDER_STREAM && pc_stage_on_device(c->d.device);
}

/* An operand given to the real batch: counted as a copy, and in the
 * copies table when the call succeeded (as a single copy's call). */
static void pc_batch_count(const struct pc_copy *c, uint64_t ns, int ok)
{
    PC_STAT_INC(memcpy_calls);
    PC_STAT_ADD(memcpy_bytes, c->n);
    if (c->s.cached || c->d.cached)
        PC_STAT_INC(memcpy_cached_src);
    if (ok)
        pc_diag_copy_operand(c, ns, 0);
}

/* A staged operand: a single async copy through the copy policy, which
 * counts it (the table's row is ours: PC_NOTE_BATCH). */
static int pc_batch_stage_one(const struct pc_batch *b, struct pc_copy *c)
{
    uint64_t t0 = pc_now_ns();
    int r;

    r = pc_copy_run(c, b->drv ? &pc_flavour_drv : &pc_flavour_rt);
    if (r == 0)
        pc_diag_copy_operand(c, pc_now_ns() - t0, c->kind == cudaMemcpyDeviceToHost);
    return r;
}

/* The rest of a split batch, as arrays for the real call. */
struct pc_batch_rest {
    void *dsts, *srcs;       /* void *[] or CUdeviceptr[] */
    size_t *sizes, *map;     /* map: the rest's index -> the batch's */
    size_t *idxs;
    CUmemcpyAttributes *attrs;
    size_t n, nattrs;
};

static void pc_batch_rest_free(struct pc_batch_rest *r)
{
    free(r->dsts);
    free(r->srcs);
    free(r->sizes);
    free(r->map);
    free(r->idxs);
    free(r->attrs);
}

static void pc_batch_put(const struct pc_batch *b, void *arr, size_t j, const void *p)
{
    if (b->drv)
        ((CUdeviceptr *)arr)[j] = (CUdeviceptr)(uintptr_t)p;
    else
        ((const void **)arr)[j] = p;
}

/* The operands not staged, each attribute that still applies to one of
 * them, unchanged, and its first index in the rest.  0, or -1: no memory. */
static int pc_batch_rest_build(const struct pc_batch *b, const struct pc_copy *ops, const unsigned char *staged,
                               struct pc_batch_rest *r)
{
    size_t k = 0, emitted = (size_t)-1;

    memset(r, 0, sizeof *r);
    r->dsts = malloc(b->count * sizeof(CUdeviceptr));
    r->srcs = malloc(b->count * sizeof(CUdeviceptr));
    r->sizes = malloc(b->count * sizeof(size_t));
    r->map = malloc(b->count * sizeof(size_t));
    r->idxs = malloc(b->numAttrs * sizeof(size_t));
    r->attrs = malloc(b->numAttrs * sizeof(CUmemcpyAttributes));
    if (!r->dsts || !r->srcs || !r->sizes || !r->map || !r->idxs || !r->attrs) {
        pc_batch_rest_free(r);
        return -1;
    }
    for (size_t i = 0; i < b->count; i++) {
        while (k + 1 < b->numAttrs && b->attrsIdxs[k + 1] <= i)
            k++;
        if (staged[i])
            continue;
        if (emitted != k) {
            r->attrs[r->nattrs] = *pc_batch_attr(b, k);
            r->idxs[r->nattrs++] = r->n;
            emitted = k;
        }
        pc_batch_put(b, r->dsts, r->n, ops[i].dst);
        pc_batch_put(b, r->srcs, r->n, ops[i].src);
        r->sizes[r->n] = ops[i].n;
        r->map[r->n++] = i;
    }
    return 0;
}

/* The real call's operands counted, its time shared among them by their
 * bytes (ok: it succeeded). */
static void pc_batch_count_made(const struct pc_copy *ops, const unsigned char *staged, size_t count, uint64_t ns,
                                int ok)
{
    uint64_t bytes = 0;

    for (size_t i = 0; i < count; i++)
        if (!staged || !staged[i])
            bytes += ops[i].n;
    for (size_t i = 0; i < count; i++)
        if (!staged || !staged[i])
            pc_batch_count(&ops[i], bytes ? (uint64_t)((double)ns * ops[i].n / bytes) : 0, ok);
}

/* Stage the marked operands in index order, then the rest as one batch. */
static int pc_batch_split(const struct pc_batch *b, struct pc_copy *ops, const unsigned char *staged)
{
    struct pc_batch_rest rest;
    size_t fi;
    uint64_t t0;
    int r = 0;

    if (pc_batch_rest_build(b, ops, staged, &rest) != 0)
        return -1;
    for (size_t i = 0; i < b->count; i++) {
        if (!staged[i] || (r = pc_batch_stage_one(b, &ops[i])) == 0)
            continue;
        if (b->has_fail)
            *b->failIdx = i;
        pc_batch_rest_free(&rest);
        return r;
    }
    if (rest.n) {
        fi = b->has_fail ? *b->failIdx : 0;
        t0 = pc_now_ns();
        r = pc_batch_real(b, rest.dsts, rest.srcs, rest.sizes, rest.n, rest.attrs, rest.idxs, rest.nattrs, &fi);
        if (b->has_fail)
            *b->failIdx = r != 0 && fi < rest.n ? rest.map[fi] : fi;
        pc_batch_count_made(ops, staged, b->count, pc_now_ns() - t0, r == 0);
    }
    pc_batch_rest_free(&rest);
    return r;
}

int pc_batch_copy(const struct pc_batch *b)
{
    struct pc_copy *ops = NULL;
    unsigned char *staged = NULL;
    int valid, clean, stage, any = 0, r;
    uint64_t bytes = 0, t0;
    size_t k = 0;

    pc_mark_used();
    if (pc_state.mode == PC_MODE_OFF)
        return pc_batch_real_all(b);
    pc_call_note(PC_NOTE_BATCH);
    if (b->drv)
        pc_drv_copy_seen(b->ptsz && !b->stream ? CU_STREAM_PER_THREAD : (CUstream)b->stream);
    else
        pc_stream_seen(b->stream);
    valid = pc_batch_valid(b);
    if (valid)
        ops = calloc(b->count, sizeof *ops);
    if (!ops)                /* judged by the real call: no operand is read */
        return pc_batch_real_all(b);
    /* A pending error: our queries could replace it (pc_copy_classify's rule). */
    clean = !pc_state.forked_child && PC_CALL_REAL(cudaPeekAtLastError) == cudaSuccess;
    stage = clean && pc_opt.stage != PC_STAGE_OFF && pc_state.mode == PC_MODE_CACHE && (staged = calloc(b->count, 1)) != NULL;
    for (size_t i = 0; i < b->count; i++) {
        while (k + 1 < b->numAttrs && b->attrsIdxs[k + 1] <= i)
            k++;
        pc_batch_operand(b, i, clean, &ops[i]);
        bytes += ops[i].n;
        if (stage && pc_batch_stageable(&ops[i], pc_batch_attr(b, k)))
            any = staged[i] = 1;
    }
    pc_call_set_bytes(bytes);
    r = -1;
    if (any && !pc_batch_capturing(b))
        r = pc_batch_split(b, ops, staged);
    if (r == -1) {           /* nothing staged: the batch as it came */
        t0 = pc_now_ns();
        r = pc_batch_real_all(b);
        pc_batch_count_made(ops, NULL, b->count, pc_now_ns() - t0, r == 0);
    }
    free(staged);
    free(ops);
    return r;
}

/* --- 3D batches: counted and seen, never staged --- */

/* One operand of w x h x d bytes, counted as a copy. */
static uint64_t pc_batch3d_op(size_t w, size_t h, size_t d)
{
    uint64_t b = (uint64_t)w * h * d;

    pc_copy_seen(b);
    return b;
}

void pc_batch3d_seen_rt(cudaStream_t s)
{
    pc_stream_seen(s);
}

void pc_batch3d_seen_drv(CUstream s)
{
    pc_drv_copy_seen(s);
}

void pc_batch3d_made_rt(size_t n, const struct cudaMemcpy3DBatchOp *ops, int ok)
{
    uint64_t bytes = 0;

    for (size_t i = 0; ok && ops && i < n; i++)
        bytes += pc_batch3d_op(ops[i].extent.width, ops[i].extent.height, ops[i].extent.depth);
    pc_call_set_bytes(bytes);
}

void pc_batch3d_made_drv(size_t n, const CUDA_MEMCPY3D_BATCH_OP *ops, int ok)
{
    uint64_t bytes = 0;

    for (size_t i = 0; ok && ops && i < n; i++)
        bytes += pc_batch3d_op(ops[i].extent.width, ops[i].extent.height, ops[i].extent.depth);
    pc_call_set_bytes(bytes);
}
