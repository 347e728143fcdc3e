/* diag.h - accounting of every interposed call: time inside it (with a
 * histogram), bytes, cache hits, real calls, and whether it waited for GPU
 * work (sync attribution); copies by memory kind; in observe mode, a shadow
 * of the cache that predicts what cache mode would save.  The numbers go to
 * pc_stats (stats.def's PC_API and PC_COPY rows) and to the trace.
 *
 * A wrapper opens a record for its call (PC_FORWARD_TIMED); the core adds
 * what it learns with pc_call_note(); closing the record does the counting. */
#ifndef PC_DIAG_H
#define PC_DIAG_H
#include <stdint.h>
#include "util/state.h"
#include "real/cudart_ext.h"
#include "core/copyhow.h"
#include "util/options.h"
#include "util/stats.h"
#include "util/clock.h"
#include "diag/call.h"

extern __thread struct pc_call pc_tls_call __attribute__((tls_model("initial-exec")));

/* The cache's own calls, 0-2 (call.h's hit_ns), or -1. */
static inline int pc_cache_api(int api)
{
    return api == PC_API_host_alloc ? 0 : api == PC_API_malloc_host ? 1 : api == PC_API_free_host ? 2 : -1;
}

/* A cache hit pair costs pincache less than the two clock reads of each of
 * its calls (issue 19: tests/bench/simhit.c, callcost.cu's tsc), so in cache
 * mode, while neither the trace nor CUPTI wants each call's times, a
 * thread's cache calls are timed one in PC_HIT_SAMPLE; the others start
 * untimed and are counted with the duration of the thread's last timed hit
 * of the same kind, unless they turn out to be more than a hit: every path
 * that goes beyond one (a real allocation or free, a release of idle
 * blocks, a wait for a fence, the rings' shedding) calls pc_call_slow
 * first, which starts the clock there (what came before it, the cache's
 * own lookup, is left out: well under a microsecond). */
static inline int pc_hit_sampling(void)
{
    return pc_state.mode == PC_MODE_CACHE && !pc_opt.trace && pc_opt.cupti == PC_CUPTI_OFF;
}

static inline void pc_call_begin(int api, uint64_t bytes, void *ptr)
{
    struct pc_call *c = &pc_tls_call;
    int k;

#ifdef PC_DIAG_DISABLE   /* benchmarks only: measure the hooks' cost */
    c->api = -1;
    return;
#endif
    if (pc_state.mode == PC_MODE_OFF) {
        c->api = -1;
        return;
    }
    c->api = api;
    c->bytes = bytes;
    c->ptr = ptr;
    c->copy = -1;
    /* Only the cache's own APIs can be served without the runtime. */
    k = pc_cache_api(api);
    c->notes = k >= 0 ? 0 : PC_NOTE_REAL;
    /* From the TSC once it is calibrated (util/clock.h); the end reads the
     * same clock as the entry. */
    c->tick_mult = pc_tick_rate();
    c->untimed = k >= 0 && c->hit_ns[k] && (++c->hit_seq[k] % PC_HIT_SAMPLE) != 0 && pc_hit_sampling();
    if (!c->untimed)
        c->t0 = c->tick_mult ? pc_tick() : pc_now_ns();
}

/* This cache call goes beyond a hit: time it from here if it was not. */
static inline void pc_call_slow(void)
{
    struct pc_call *c = &pc_tls_call;

    c->notes |= PC_NOTE_SLOW;
    if (c->untimed) {
        c->untimed = 0;
        c->t0 = c->tick_mult ? pc_tick() : pc_now_ns();
    }
}

/* Close the record: ok says whether the call succeeded.  pc_call_end
 * looks for a cache hit by sample first (diag.c); pc_call_end_other is
 * for the other APIs, which need not look; pc_call_close picks, for an api
 * known where it is compiled. */
void pc_call_end(int ok);
void pc_call_end_other(int ok);
static inline void pc_call_close(int api, int ok)
{
    if (pc_cache_api(api) >= 0)
        pc_call_end(ok);
    else
        pc_call_end_other(ok);
}

static inline void pc_call_note(unsigned notes)
{
    pc_tls_call.notes |= notes;
}

static inline void pc_call_set_bytes(uint64_t bytes)
{
    pc_tls_call.bytes = bytes;
}

/* --- sync attribution: did this call wait for GPU work? --- */

/* The calls whose only work is the wait (cudaStreamSynchronize and its
 * _ptsz form, on stream s with the per-thread stream resolved;
 * cudaDeviceSynchronize): they waited when they lasted at least
 * PC_SYNC_WAITED_NS (diag.c), so no CUDA call of ours is on their path.
 * Only a thread's first call of each kind, which may pay for the runtime's
 * lazy start-up, is asked as below instead. */
void pc_diag_sync_stream(cudaStream_t s);
void pc_diag_sync_device(void);
/* Calls that do work of their own besides waiting for the whole device
 * (cudaFree, cudaHostUnregister): their duration cannot tell, so the
 * fenced streams are asked; notes PC_NOTE_BUSY when any is busy. */
void pc_diag_probe_device(void);

/* Is this thread's call accounted (a record open, mode not off)? */
static inline int pc_call_accounted(void)
{
    return pc_tls_call.api >= 0;
}

/* --- copies (api/copy.c): the kind of the host side, from the sides the
 * copy policy classified (c->known), and whether the copies that wait
 * for their stream (stage.h's pc_rt_copy_waits) did: by their duration
 * below 1 MiB, else one query of the stream (diag.c, PC_COPY_PROBE_MIN) --- */
void pc_diag_copy(const struct pc_copy *c);
/* One operand of a batched copy (the call noted PC_NOTE_BATCH), classified
 * like a single copy: its row of the copies table, with ns of time (timed:
 * it returned only once its data was there). */
void pc_diag_copy_operand(const struct pc_copy *c, uint64_t ns, int timed);

/* In a forked child: the parent's shadow blocks are not the child's. */
void pc_diag_after_fork_child(void);

#endif
