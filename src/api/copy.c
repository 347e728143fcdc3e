/* copy.c - host<->device copies: counted, each side's memory kind decided
 * once (core/memkind.h) for the accounting and for staging, then staged or
 * passed to the runtime here, so that the interposition layer stays a
 * forwarder and staging never calls the runtime's copy itself. */
#include "config.h"
#include "api/copy.h"
#include "api/streams.h"
#include "api/flavour.h"
#include "util/state.h"
#include "util/options.h"
#include "real/real.h"
#include "stage/stage.h"
#include "util/stats.h"
#include "diag/diag.h"
#include "core/cache.h"

/* The real runtime's copy for that call shape. */
static cudaError_t pc_copy_real(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                cudaStream_t stream, enum pc_copy_how how)
{
    return (cudaError_t)pc_flavour_rt.copy(dst, src, n, kind, stream, how);
}

/* Classify the host side(s) of c, where the accounting or staging will look
 * at them: H2D the source, D2H the destination, cudaMemcpyDefault both.
 * Staging asks about the device side itself, through the same c. */
static void pc_copy_classify(struct pc_copy *c)
{
    if (c->clean)            /* a batch's operand, classified by its policy */
        return;
    if (!c->n || !c->dst || !c->src || pc_state.forked_child)
        return;
    if (c->kind != cudaMemcpyHostToDevice && c->kind != cudaMemcpyDeviceToHost &&
        c->kind != cudaMemcpyDefault)
        return;
    if (!pc_call_accounted() && !pc_stage_considers(c->n))
        return;
    /* A pending error: our queries could replace it, and the program must
     * find it unchanged. */
    if (PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        return;
    c->clean = 1;
    if (c->kind != cudaMemcpyDeviceToHost)
        pc_mem_of(&c->s);
    if (c->kind != cudaMemcpyHostToDevice)
        pc_mem_of(&c->d);
}

cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how)
{
    struct pc_copy c = { .dst = dst, .src = src, .n = n, .kind = kind, .stream = stream, .how = how,
                         .s = { .p = src }, .d = { .p = dst } };

    if (pc_state.mode != PC_MODE_OFF) {
        /* Looked up once: the classifier takes the cache's blocks from here. */
        c.s.cached = pc_cache_owns(src);
        c.d.cached = pc_cache_owns(dst);
    }
    return pc_copy_run(&c);
}

cudaError_t pc_copy_run(struct pc_copy *c)
{
    void *dst = c->dst;
    const void *src = c->src;
    size_t n = c->n;
    enum cudaMemcpyKind kind = c->kind;
    cudaStream_t stream = c->stream;
    enum pc_copy_how how = c->how;
    struct pc_staged st;
    cudaError_t r;
    uint64_t t0;

    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(memcpy_calls);
        PC_STAT_ADD(memcpy_bytes, n);
        if (c->s.cached || c->d.cached)
            PC_STAT_INC(memcpy_cached_src);
        pc_copy_classify(c);
        pc_diag_copy(c);
        if (how == PC_COPY_ASYNC || how == PC_COPY_ASYNC_PTSZ)
            pc_stream_seen(stream);
    }
    switch (pc_stage_copy(c, &st)) {
    case PC_STAGE_DONE:
        r = st.err;
        if (st.redo < n)     /* the rest is the runtime's */
            r = pc_copy_real((char *)dst + st.redo, (const char *)src + st.redo, n - st.redo, kind,
                             st.stream, st.how);
        pc_stage_done(&st, n);
        return r;
    case PC_STAGE_PASS:      /* a pageable copy left to the runtime: timed for the report */
        t0 = pc_now_ns();
        r = pc_copy_real(dst, src, n, kind, stream, how);
        pc_stage_passed(&st, n, pc_now_ns() - t0);
        return r;
    }
    return pc_copy_real(dst, src, n, kind, stream, how);
}

void pc_copy_seen(size_t bytes)
{
    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(memcpy_calls);
        PC_STAT_ADD(memcpy_bytes, bytes);
    }
}

/* A driver 1D copy (cuMemcpy, HtoD, DtoH, their Async and per-thread
 * forms): counted as the runtime's are, its context's device in use for the
 * fences, then the real one.  Neither classified nor staged yet (issue 17):
 * no CUDA call of its own beyond pc_drv_copy_seen's. */
CUresult pc_drv_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s,
                       enum pc_copy_how how)
{
    pc_copy_seen(n);
    pc_drv_copy_seen(how == PC_COPY_SYNC_PTDS ? CU_STREAM_PER_THREAD : s);
    return (CUresult)pc_flavour_drv.copy(dst, src, n, kind, s, how);
}
