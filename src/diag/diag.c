/* diag.c - per-call accounting, sync attribution and copy kinds (see
 * diag.h); observe mode's shadow cache (shadow.c), the trace and the CUPTI
 * timeline are their own modules.
 *
 * The hot path (a cache hit, an idle synchronizing call) costs two clock
 * reads and a handful of adds into this thread's own counters
 * (util/stats.h): no lock, no atomic read-modify-write, no CUDA call.
 * Probes that ask CUDA whether work is in flight run only for calls that
 * can wait for it and whose duration cannot tell (diag.h). */
#include "config.h"
#include "diag/diag.h"
#include "core/fence.h"
#include "util/hist.h"
#include "real/real.h"
#include "diag/trace.h"
#include "diag/cupti.h"
#include "diag/shadow.h"
#include "stage/stage.h"

__thread struct pc_call pc_tls_call __attribute__((tls_model("initial-exec"))) = { .api = -1 };


/* --- closing a call ------------------------------------------------------- */

/* What an idle synchronizing call costs on the H200: cudaStreamSynchronize
 * 0.23-0.48 us, cudaDeviceSynchronize 0.34-0.76 us in a loop (issue 19), but
 * 2.5-28 us right after real frees of pinned and device memory (run 63,
 * tests/diag/gpu_attrib.cu: with a 5 us bound 5 of 10 idle device syncs
 * counted as waits).  A call that waits for GPU work takes at least what
 * is left of that work plus the wake-up, so 100 us tells the two apart with
 * room; a wait shorter than that is not counted (it cost little).  CUPTI,
 * when on, gives the exact overlap besides (gpu_waited, gpu_stall_ns). */
#define PC_SYNC_WAITED_NS 100000u

/* Into this thread's counters (mine, util/stats.h). */
#define PC_ADD(field, v) pc_count(&(field), (uint64_t)(v), mine)

/* Observe mode's shadow of the cache follows the host-memory calls; the
 * registered ranges are followed in every mode. */
static int pc_shadowed(int api)
{
    switch (api) {
    case PC_API_host_register:
    case PC_API_host_unregister:
        return 1;
    case PC_API_host_alloc:
    case PC_API_malloc_host:
    case PC_API_free_host:
        return pc_state.mode == PC_MODE_OBSERVE;
    default:
        return 0;
    }
}

static void pc_call_end_full(struct pc_call *c, int ok) __attribute__((noinline));

void pc_call_end_other(int ok)
{
    pc_call_end_full(&pc_tls_call, ok);
}

/* A hit by sample that stayed a plain hit (the hit pair's two calls, most
 * of a cache's calls): the general path's counts for that case, read off
 * the thread's last timed hit, into the thread's own block; nothing else
 * applies (no copy, no wait, a cache call in cache mode, which is never
 * shadowed, and CUPTI off: only the thread's first call may start it, to
 * be refused).  Kept small, so that the rest, pc_call_end_full, is a tail
 * call that costs this path nothing. */
void pc_call_end(int ok)
{
    struct pc_call *c = &pc_tls_call;
    struct pc_stats *s = pc_tls_stats;
    struct pc_api_stat *a;
    int mine = 1, kind;

    if (!c->untimed || !ok || c->notes != PC_NOTE_HIT || c->copy >= 0 || !s || !c->cupti_asked ||
        (unsigned)c->api >= PC_API_COUNT || (kind = pc_cache_api(c->api)) < 0) {
        pc_call_end_full(c, ok);
        return;
    }
    a = &s->api[c->api];
    if (c->bytes)
        PC_ADD(a->bytes, c->bytes);
    PC_ADD(a->ns, c->hit_ns[kind]);
    PC_ADD(a->hist[c->hit_bucket[kind]], 1);
    PC_ADD(a->sampled, 1);
    PC_ADD(a->hits, 1);
    PC_ADD(a->runtime_skipped, 1);
    c->untimed = 0;
    c->api = -1;
}

static void pc_call_end_full(struct pc_call *c, int ok)
{
    struct pc_api_stat *a;
    struct pc_stats *s;
    uint64_t t1 = 0, dt;
    int mine, kind, sampled = c->untimed;

    kind = pc_cache_api(c->api);
    if (c->api < 0 || c->api >= PC_API_COUNT)
        return;
    if (sampled) {
        /* A cache call that started untimed and stayed a hit (diag.h): at
         * the duration of the thread's last timed hit of its kind, and no
         * maximum; neither the trace nor CUPTI is on. */
        dt = c->hit_ns[kind];
    } else if (c->tick_mult) {
        /* Only while neither the trace nor CUPTI wants times (clock.h). */
        t1 = pc_tick();
        dt = pc_tick_ns(t1 > c->t0 ? t1 - c->t0 : 0, c->tick_mult);
    } else {
        t1 = pc_now_ns();
        dt = t1 > c->t0 ? t1 - c->t0 : 0;
        pc_tick_maybe_learn(t1);
    }
    if (ok && pc_shadowed(c->api))
        pc_shadow_update(c, dt);

    /* calls and real_calls come from hist and runtime_skipped (stats.h). */
    s = pc_stats_here(&mine);
    a = &s->api[c->api];
    if (c->bytes)
        PC_ADD(a->bytes, c->bytes);
    PC_ADD(a->ns, dt);
    PC_ADD(a->hist[pc_hist_bucket(dt)], 1);
    if (sampled)
        PC_ADD(a->sampled, 1);
    else
        pc_count_max(&a->max_ns, dt, mine);
    if (c->notes & PC_NOTE_HIT)
        PC_ADD(a->hits, 1);
    if (!(c->notes & PC_NOTE_REAL))
        PC_ADD(a->runtime_skipped, 1);
    if ((c->notes & PC_NOTE_WAITS) && dt >= PC_SYNC_WAITED_NS + (c->copy >= 0 ? c->bytes : 0))
        c->notes |= PC_NOTE_BUSY;
    if ((c->notes & PC_NOTE_BUSY) && ok) {
        PC_ADD(a->synced, 1);
        PC_ADD(a->stall_ns, dt);
    }
    if (c->notes & PC_NOTE_AVOIDED)
        PC_ADD(a->sync_avoided, 1);
    if (c->copy >= 0 && c->copy < PC_COPY_COUNT && ok) {
        struct pc_copy_stat *k = &s->copy[c->copy];
        PC_ADD(k->calls, 1);
        PC_ADD(k->bytes, c->bytes);
        PC_ADD(k->ns, dt);
        if (c->notes & PC_NOTE_TIMED) {
            PC_ADD(k->timed_bytes, c->bytes);
            PC_ADD(k->timed_ns, dt);
        }
    }
    if (kind >= 0 && !sampled && !(c->notes & (PC_NOTE_REAL | PC_NOTE_MISS | PC_NOTE_SLOW))) {
        c->hit_ns[kind] = dt ? dt : 1;
        c->hit_bucket[kind] = pc_hist_bucket(c->hit_ns[kind]);
    }
    if (c->tick_mult || sampled) {
        pc_cupti_call_end(c->api, c->notes, 0, 0, ok);   /* off: only its start-up's refusal */
    } else {
        pc_cupti_call_end(c->api, c->notes, c->t0, t1, ok);
        pc_trace_add(c, t1, ok);
    }
    if (!c->cupti_asked)
        c->cupti_asked = pc_cupti_state() != PC_CUPTI_IDLE;
    c->untimed = 0;
    c->api = -1;
}

/* --- sync attribution ----------------------------------------------------- */

/* Our queries must not disturb the program: none during a stream capture
 * (a query of a capturing stream invalidates the capture) and, through the
 * runtime, none while an error is pending (ours could replace it). */
static int pc_may_probe(void)
{
    return pc_tls_call.api >= 0 && !pc_state.forked_child && pc_fence_capturing() <= 0;
}

static int pc_can_probe(int clean)
{
    return pc_may_probe() && (clean || PC_CALL_REAL(cudaPeekAtLastError) == cudaSuccess);
}

void pc_diag_probe_device(void)
{
    if (!pc_can_probe(0))
        return;
    if (pc_fence_busy_now())
        pc_call_note(PC_NOTE_BUSY);
    if (PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        PC_CALL_REAL(cudaGetLastError);       /* ours: nothing was pending */
}

/* The driver's cuStreamQuery: libcuda's, or else the runtime's entry point
 * for it (the simulated device has no libcuda), the latter asked only when
 * no error is pending (clean_now: a failure of ours is cleared).  Decided
 * once (a lookup that finds nothing is not cheap); NULL until then, and
 * where there is none. */
typedef CUresult (*pc_stream_query_fn)(CUstream);

static pc_stream_query_fn pc_drv_stream_query(int clean_now)
{
    static pc_stream_query_fn fn;   /* atomic, final once done is set */
    static int done;                /* atomic */
    pc_stream_query_fn f;

    if (__atomic_load_n(&done, __ATOMIC_ACQUIRE))
        return __atomic_load_n(&fn, __ATOMIC_RELAXED);
    f = (pc_stream_query_fn)PC_REAL(cuStreamQuery);
    if (!f) {
        if (!clean_now)
            return NULL;
        f = (pc_stream_query_fn)pc_real_drv_entry(NULL, "cuStreamQuery", 2000);
        if (!f)
            PC_CALL_REAL(cudaGetLastError);   /* ours: nothing was pending */
    }
    __atomic_store_n(&fn, f, __ATOMIC_RELAXED);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return f;
}

/* One query of stream s (the legacy and per-thread handles are the
 * driver's too).  The driver's first: it leaves the runtime's last error
 * alone, so no check for a pending one is needed before it.  Any answer but
 * done or not ready (no context current on this thread yet, a broken one)
 * and the runtime is asked instead, as before.  clean: the caller has seen
 * no error pending, and left none. */
static void pc_probe_stream(cudaStream_t s, int clean)
{
    pc_stream_query_fn drv;
    cudaError_t e;
    CUresult r;

    if (s == cudaStreamPerThread)
        pc_tls_ptstream = 1;     /* the program's own call is about to use it */
    if (!pc_may_probe())
        return;
    drv = pc_drv_stream_query(0);
    if (drv && ((r = drv((CUstream)s)) == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY)) {
        if (r == CUDA_ERROR_NOT_READY)
            pc_call_note(PC_NOTE_BUSY);
        return;
    }
    if (!clean && PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        return;
    if (!drv)
        pc_drv_stream_query(1);  /* for the next ones */
    e = PC_CALL_REAL(cudaStreamQuery, s);
    if (e == cudaErrorNotReady)
        pc_call_note(PC_NOTE_BUSY);
    else if (e != cudaSuccess)
        PC_CALL_REAL(cudaGetLastError);
}

/* A thread's first call of each kind pays for more than its wait: the
 * dynamic linker's binding, pincache's lookup of the real function, the
 * runtime's lazy creation of its context (a cudaDeviceSynchronize as a
 * program's first call) or of the thread's per-thread stream.  On the
 * simulated device such an idle call took 12 us.  That one call is asked,
 * as the calls that do work of their own are; the thread's next ones are
 * timed.  Bits of pc_tls_sync_seen: */
#define PC_SEEN_STREAM   0x1u
#define PC_SEEN_PTSTREAM 0x2u
#define PC_SEEN_DEVICE   0x4u
#define PC_SEEN_COPY     0x8u
static __thread unsigned pc_tls_sync_seen __attribute__((tls_model("initial-exec")));

static int pc_sync_first(unsigned kind)
{
    if (__builtin_expect(pc_tls_sync_seen & kind, 1))
        return 0;
    pc_tls_sync_seen |= kind;
    return 1;
}

void pc_diag_sync_stream(cudaStream_t s)
{
    int pt = s == cudaStreamPerThread;

    if (pc_sync_first(pt ? PC_SEEN_PTSTREAM : PC_SEEN_STREAM)) {
        pc_probe_stream(s, 0);
        return;
    }
    if (pt)
        pc_tls_ptstream = 1;     /* as pc_probe_stream */
    pc_call_note(PC_NOTE_WAITS);
}

void pc_diag_sync_device(void)
{
    if (pc_sync_first(PC_SEEN_DEVICE))
        pc_diag_probe_device();
    else
        pc_call_note(PC_NOTE_WAITS);
}

/* --- copies --------------------------------------------------------------- */

/* Below this size a copy that waits for its stream is judged as the
 * synchronizing calls are, by its duration, against PC_SYNC_WAITED_NS plus
 * 1 ns per byte (pc_call_end): the stream query cost 0.2-0.35 us on the
 * H200, 1.5-4% of a 4 KiB or 64 KiB copy (8-16 us; synctax, run 68), and
 * the slowest copies measured there, pageable D2H into freshly mapped pages,
 * ran at 1.6 GB/s, 0.6 ns per byte (xover).  A wait shorter than the slack
 * is not counted.  From 1 MiB on a copy takes 40 us or more and the query
 * is asked; so is a thread's first such copy, which may pay for the
 * runtime's lazy start-up (as the first synchronizing calls). */
#define PC_COPY_PROBE_MIN (1u << 20)

/* The copies-table row of c (classified by the copy policy: nothing is
 * asked again here), or -1: not a host copy.  *h2d and *mk: its direction
 * and host memory kind. */
static int pc_diag_copy_row(const struct pc_copy *c, int *h2d, enum pc_mem *mk)
{
    if (!c->known)
        return -1;
    switch (c->kind) {
    case cudaMemcpyHostToDevice:
        *h2d = 1;
        *mk = c->s.kind;
        break;
    case cudaMemcpyDeviceToHost:
        *h2d = 0;
        *mk = c->d.kind;
        break;
    default:                 /* cudaMemcpyDefault */
        if (pc_mem_is_host(c->s.kind) && c->d.kind == PC_MEM_DEVICE) {
            *h2d = 1;
            *mk = c->s.kind;
        } else if (c->s.kind == PC_MEM_DEVICE && pc_mem_is_host(c->d.kind)) {
            *h2d = 0;
            *mk = c->d.kind;
        } else {
            return -1;
        }
        break;
    }
    if (!pc_mem_is_host(*mk))
        return -1;
    if (*h2d)
        return *mk == PC_MEM_PAGEABLE ? PC_COPY_h2d_pageable : PC_COPY_h2d_pinned;
    return *mk == PC_MEM_PAGEABLE ? PC_COPY_d2h_pageable : PC_COPY_d2h_pinned;
}

void pc_diag_copy(const struct pc_copy *c)
{
    int sync = c->how == PC_COPY_SYNC || c->how == PC_COPY_SYNC_PTDS;
    enum pc_mem mk = PC_MEM_UNASKED;
    int h2d = 0, row;
    cudaStream_t s;

    if (pc_tls_call.api < 0 || (row = pc_diag_copy_row(c, &h2d, &mk)) < 0)
        return;
    /* A batch's operands have rows of their own (pc_diag_copy_operand). */
    if (!(pc_tls_call.notes & PC_NOTE_BATCH)) {
        pc_tls_call.copy = row;
        /* These return only when the data is there (CUDA's API sync behaviour). */
        if (sync || (!h2d && mk == PC_MEM_PAGEABLE))
            pc_call_note(PC_NOTE_TIMED);
    }
    s = c->how == PC_COPY_SYNC ? cudaStreamLegacy
      : c->how == PC_COPY_SYNC_PTDS ? cudaStreamPerThread
      : c->how == PC_COPY_ASYNC_PTSZ && !c->stream ? cudaStreamPerThread : c->stream;
    if (s == cudaStreamPerThread)
        pc_tls_ptstream = 1;     /* as pc_probe_stream */
    /* The copies the runtime holds for their stream's earlier work
     * (synchronous ones, pageable D2H, pageable async H2D beyond 2 MiB:
     * stage.h) wait for it when it is in flight: one query of the stream.
     * A pageable async H2D of up to 2 MiB is read at the call and waits for
     * nothing (pincache(7) PAGEABLE COPIES), a pinned async copy neither. */
    if (!pc_rt_copy_waits(h2d, sync, mk == PC_MEM_PAGEABLE, c->n))
        return;
    if (c->n < PC_COPY_PROBE_MIN && !(pc_tls_call.notes & PC_NOTE_BATCH) && !pc_sync_first(PC_SEEN_COPY))
        pc_call_note(PC_NOTE_WAITS);
    else
        pc_probe_stream(s, c->clean);
}

void pc_diag_copy_operand(const struct pc_copy *c, uint64_t ns, int timed)
{
    struct pc_copy_stat *k;
    enum pc_mem mk;
    int h2d, row, mine;

    if (pc_tls_call.api < 0 || (row = pc_diag_copy_row(c, &h2d, &mk)) < 0)
        return;
    k = &pc_stats_here(&mine)->copy[row];
    PC_ADD(k->calls, 1);
    PC_ADD(k->bytes, c->n);
    PC_ADD(k->ns, ns);
    if (timed) {
        PC_ADD(k->timed_bytes, c->n);
        PC_ADD(k->timed_ns, ns);
    }
}

/* --- start-up and fork ------------------------------------------------------ */

void pc_diag_after_fork_child(void)
{
    pc_tls_call.api = -1;
}
