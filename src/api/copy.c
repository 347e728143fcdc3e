/* copy.c - host<->device copies, the runtime's and the driver's 1D ones
 * through one policy: counted, each side's memory kind decided once
 * (core/memkind.h) for the accounting and for staging (for the accounting
 * alone, where staging does not look, from what pincache knows where it
 * can: core/hostkind.h), then staged or passed to the real copy of the
 * call's flavour here, so that the interposition layer stays a forwarder
 * and staging never makes a copy of the program's itself. */
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
#include "core/hostkind.h"

/* Which sides of c are host sides the accounting and staging look at: H2D
 * the source, D2H the destination, cudaMemcpyDefault both (its direction
 * comes from them).  Bit 1: the source, bit 2: the destination. */
static unsigned pc_copy_host_sides(const struct pc_copy *c)
{
    switch (c->kind) {
    case cudaMemcpyHostToDevice: return 1;
    case cudaMemcpyDeviceToHost: return 2;
    case cudaMemcpyDefault:      return 3;
    default:                     return 0;
    }
}

/* For the accounting alone, without the runtime where pincache knows: a
 * page this thread found pageable since memory was last pinned anywhere is
 * pageable (pc_copy_lookup looked), a side in a block pincache follows is
 * pinned (the cache's, a registered range, observe mode's blocks:
 * core/hostkind.h).  1: decided. */
static int pc_side_known(struct pc_mem_side *s)
{
    if (s->kind == PC_MEM_UNASKED && (s->cached || pc_hostkind_pinned(s->p)))
        s->kind = PC_MEM_PINNED;
    return s->kind != PC_MEM_UNASKED;
}

/* The runtime's answer (no error pending), a pageable one remembered. */
static void pc_side_ask(struct pc_mem_side *s)
{
    unsigned epoch = pc_hostkind_epoch();

    if (s->kind == PC_MEM_UNASKED && pc_mem_of(s) == PC_MEM_PAGEABLE)
        pc_hostkind_note_pageable(s->p, epoch);
}

/* A copy staging does not consider (below PINCACHE_STAGE_MIN, or staging
 * off) is classified for the report only: what is known above is taken as
 * it is, and only the rest is asked, after the one check that no error is
 * pending (pc_copy_classify's reason).  c->cheap: never for staging. */
static void pc_copy_classify_for_report(struct pc_copy *c, unsigned sides)
{
    int need = ((sides & 1) && !pc_side_known(&c->s)) | ((sides & 2) && !pc_side_known(&c->d));

    c->cheap = 1;
    if (need) {
        if (PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
            return;
        c->clean = 1;
        if (sides & 1)
            pc_side_ask(&c->s);
        if (sides & 2)
            pc_side_ask(&c->d);
    }
    c->known = 1;
}

/* Classify the host side(s) of c, where the accounting or staging will look
 * at them.  Staging asks about the device side itself, through the same c. */
static void pc_copy_classify(struct pc_copy *c)
{
    unsigned sides = pc_copy_host_sides(c);

    if (c->clean)            /* a batch's operand, classified by its policy */
        return;
    if (!c->n || !c->dst || !c->src || pc_state.forked_child || !sides)
        return;
    if (!pc_stage_considers(c->n)) {
        if (pc_call_accounted())
            pc_copy_classify_for_report(c, sides);
        return;
    }
    /* A pending error: our queries could replace it, and the program must
     * find it unchanged. */
    if (PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        return;
    c->clean = 1;
    c->known = 1;
    if (sides & 1)
        pc_mem_of(&c->s);
    if (sides & 2)
        pc_mem_of(&c->d);
}

int pc_copy_run(struct pc_copy *c, const struct pc_flavour *fl)
{
    struct pc_staged st;
    int r;
    uint64_t t0;

    c->real = fl->copy;
    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(memcpy_calls);
        PC_STAT_ADD(memcpy_bytes, c->n);
        if (c->s.cached || c->d.cached)
            PC_STAT_INC(memcpy_cached_src);
        pc_copy_classify(c);
        pc_diag_copy(c);
        if (c->clean && pc_stage_considers(c->n))
            c->foreign_ctx = pc_ctx_created_current();
    }
    switch (pc_stage_copy(c, &st)) {
    case PC_STAGE_DONE:
        r = st.err;
        if (st.redo < c->n)  /* the rest is the real copy's */
            r = fl->copy((char *)c->dst + st.redo, (const char *)c->src + st.redo, c->n - st.redo, c->kind,
                         (void *)st.stream, st.how);
        pc_stage_done(&st, c->n);
        break;
    case PC_STAGE_PASS:      /* a pageable copy left to the real one: timed for the report */
        t0 = pc_now_ns();
        r = fl->copy(c->dst, c->src, c->n, c->kind, (void *)c->stream, c->how);
        pc_stage_passed(&st, c->n, pc_now_ns() - t0);
        break;
    default:
        return fl->copy(c->dst, c->src, c->n, c->kind, (void *)c->stream, c->how);
    }
    /* A driver copy leaves the runtime's last error as it found it (none:
     * checked), whatever staging's own calls left there. */
    if (!fl->runtime)
        PC_CALL_REAL(cudaGetLastError);
    return r;
}

#define PC_COPY_INIT(dst_, src_, n_, kind_, stream_, how_)                                  \
    { .dst = (dst_), .src = (src_), .n = (n_), .kind = (kind_), .stream = (cudaStream_t)(stream_), \
      .how = (how_), .s = { .p = (src_) }, .d = { .p = (dst_) } }

/* Looked up once: the classifier takes the cache's blocks from here.  Only
 * a host side can be one (a device pointer never is): an H2D copy's source,
 * a D2H copy's destination, both sides of the other kinds.  A side only
 * the accounting will look at (pc_copy_classify_for_report) on a page this
 * thread found pageable is taken as pageable without the pool's lock: no
 * block was made there since, as making one pins memory, which every
 * thread forgets its pages for (core/hostkind.h). */
static void pc_side_lookup(struct pc_mem_side *s, int report_only)
{
    if (report_only && pc_hostkind_pageable(s->p))
        s->kind = PC_MEM_PAGEABLE;
    else
        s->cached = pc_cache_owns(s->p);
}

static void pc_copy_lookup(struct pc_copy *c)
{
    int report_only;

    if (pc_state.mode == PC_MODE_OFF)
        return;
    report_only = pc_copy_host_sides(c) && !pc_stage_considers(c->n);
    if (c->kind != cudaMemcpyDeviceToHost)
        pc_side_lookup(&c->s, report_only);
    if (c->kind != cudaMemcpyHostToDevice)
        pc_side_lookup(&c->d, report_only);
}

cudaError_t pc_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                      cudaStream_t stream, enum pc_copy_how how)
{
    struct pc_copy c = PC_COPY_INIT(dst, src, n, kind, stream, how);

    pc_copy_lookup(&c);
    if (pc_state.mode != PC_MODE_OFF && (how == PC_COPY_ASYNC || how == PC_COPY_ASYNC_PTSZ))
        pc_stream_seen(stream);
    return (cudaError_t)pc_copy_run(&c, &pc_flavour_rt);
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
 * forms): its context's device in use for the fences, then counted,
 * classified and staged as the runtime's are (a static cudart's
 * cudaMemcpy arrives here), its DMAs and the rest the driver's own. */
CUresult pc_drv_memcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, CUstream s,
                       enum pc_copy_how how)
{
    struct pc_copy c = PC_COPY_INIT(dst, src, n, kind, s, how);

    pc_copy_lookup(&c);
    pc_drv_copy_seen(how == PC_COPY_SYNC_PTDS ? CU_STREAM_PER_THREAD : s);
    return (CUresult)pc_copy_run(&c, &pc_flavour_drv);
}
