/* stage.c - pageable cudaMemcpy/cudaMemcpyAsync staged through a pinned ring:
 * the entry, device resets and fork.
 *
 * The runtime copies pageable memory at 6.5-15 GB/s and pinned memory at 55
 * (measured, H200).  A staged copy is cut into pieces; the copy threads
 * (stage_threads.c) move each piece between the pageable buffer and a pinned
 * ring slot (ring.c) while the DMA of the previous piece runs (pipeline.c).
 *
 * Semantics kept (CUDA "API synchronization behavior", and the H200's
 * pageable-copy ordering: plan.c):
 *  - async H2D returns once the whole source is in the ring, so the caller may
 *    overwrite it; the DMAs run in the stream's order;
 *  - cudaMemcpy runs on the legacy default stream (cudaMemcpy_ptds on the
 *    per-thread one), reads its source after the work the runtime waits for
 *    first, and returns once the source is staged (the DMA done too, unless
 *    other work holds it);
 *  - D2H, sync or async, returns when the data is in the destination;
 *  - the copy returns the first failing DMA's error (no call after it: the
 *    ring is not used again if DMAs queued before it lack their event); an
 *    internal failure (event, ring) hands the rest of the copy to the
 *    runtime.
 * Anything we are unsure of (capture, other devices, unknown memory, an error
 * already pending) goes to the runtime untouched.  Staging makes no copy of
 * the program's through the runtime itself: the copy policy (api/copy.c)
 * does, from what pc_stage_copy says. */
#include "config.h"
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include "stage/stage.h"
#include "stage/plan.h"
#include "stage/ring.h"
#include "stage/pipeline.h"
#include "stage/native.h"
#include "stage/share.h"
#include "util/state.h"
#include "util/options.h"
#include "util/stats.h"

int pc_stage_considers(size_t n)
{
    return pc_opt.stage != PC_STAGE_OFF && n >= pc_opt.stage_min && n != 0;
}

int pc_rt_copy_waits(int h2d, int sync, int pageable, size_t n)
{
    if (sync || (pageable && !h2d))
        return 1;
    return pageable && n > PC_RT_STAGING_BYTES;
}

/* This thread's minor page faults at its last look (pc_stage_fresh). */
static __thread long pc_tls_minflt __attribute__((tls_model("initial-exec")));

/* Take this thread's minor page faults as of now; 0 when they cannot be
 * had. */
static int pc_stage_minflt_mark(void)
{
    struct rusage ru;

    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    pc_tls_minflt = ru.ru_minflt;
    return 1;
}

/* Whether an H2D copy of n bytes reads a source that looks freshly mapped:
 * below PINCACHE_STAGE_FRESH_MIN, the calling thread took page faults for
 * at least a quarter of its pages since its previous such copy ended (a
 * buffer just allocated and filled; the faults of such a copy itself are
 * not counted: pc_stage_passed and pc_stage_done look again).
 * Staged, such a copy lost to the runtime on the H200 up to 2.5 MiB and won
 * from 4 MiB (xover, runs 63-68: 1 MiB 1.28-1.72x the runtime's time,
 * 4 MiB 0.74x): the munmap that follows must shoot down the TLB of every
 * CPU a copy thread read it on.  The first copy of a thread counts the
 * faults since it began.  One getrusage (0.17 us on the CI machine)
 * before and one after, only for copies from PINCACHE_STAGE_MIN up to that
 * size. */
static int pc_stage_fresh(size_t n)
{
    long before = pc_tls_minflt;

    return n < pc_opt.stage_fresh_min && pc_stage_minflt_mark() &&
           pc_tls_minflt - before >= (long)((n / 4096 + 3) / 4);
}

/* pc_stage_fresh for an H2D copy p, counted when it says so; st notes that
 * the rule looked, so that the copy's end looks again. */
static int pc_stage_fresh_source(const struct pc_plan *p, size_t n, struct pc_staged *st)
{
    if (!p->h2d || n >= pc_opt.stage_fresh_min)
        return 0;
    st->fresh_asked = 1;
    if (!pc_stage_fresh(n))
        return 0;
    PC_STAT_INC(stage_fresh_calls);
    return 1;
}

int pc_stage_on_device(int dev)
{
    return pc_opt.stage != PC_STAGE_OFF && !(pc_opt.stage == PC_STAGE_AUTO && pc_native_device(dev));
}

int pc_stage_copy(struct pc_copy *c, struct pc_staged *st)
{
    struct pc_plan p;
    int k;

    if (pc_opt.stage == PC_STAGE_OFF || pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return PC_STAGE_NO;
    if (c->kind != cudaMemcpyHostToDevice && c->kind != cudaMemcpyDeviceToHost &&
        c->kind != cudaMemcpyDefault)
        return PC_STAGE_NO;
    if (c->n < pc_opt.stage_min || c->n == 0) {
        PC_STAT_INC(stage_small_calls);
        PC_STAT_ADD(stage_small_bytes, c->n);
        return PC_STAGE_NO;
    }
    /* NULL: the runtime's error.  A pending error: our queries could replace
     * it, and the program must find it unchanged (the copy policy checked).
     * Sides classified for the accounting only (api/copy.c): never staged
     * on their word. */
    if (!c->clean || c->cheap)
        return PC_STAGE_NO;
    memset(&p, 0, sizeof p);
    p.real = c->real;
    k = pc_plan_classify(&p, c);
    if (k == PC_SKIP)
        return PC_STAGE_NO;
    /* A device that reads pageable memory itself: the runtime's copy,
     * untimed (native.c has the rule). */
    if (k == PC_STAGE && !pc_stage_on_device(p.devno))
        return PC_STAGE_NO;
    memset(st, 0, sizeof *st);
    st->h2d = p.h2d;
    /* A created context's streams and memory are not the ring's (its events
     * belong to the primary context): the runtime's copy.  So is an H2D copy
     * from a source that looks freshly mapped (pc_stage_fresh), before any
     * wait for its stream (the runtime's copy waits itself). */
    if (k == PC_STAGE && pc_state.mode == PC_MODE_CACHE && !c->foreign_ctx &&
        pc_plan_stream_ok(&p, c->stream, c->how) && !pc_stage_fresh_source(&p, c->n, st) &&
        (!pc_rt_reads_after_stream(&p) || pc_order_wait(&p) == 0)) {
        uint64_t t0 = pc_now_ns();

        if (pthread_mutex_trylock(&pc_rings.lock) == 0) {
            int elsewhere = 0, done;
            size_t redo = p.n;
            cudaError_t err = cudaSuccess;

            done = pc_pipeline_run(&p, &err, &redo, &elsewhere);
            pthread_mutex_unlock(&pc_rings.lock);
            if (done) {
                st->err = err;
                st->redo = redo;
                st->elsewhere = elsewhere;
                st->t0 = t0;
                /* A sync cudaMemcpy_ptds H2D's rest as the async copy the
                 * runtime makes of it once its stream's own work is done, so
                 * that the runtime reads its first 2 MiB at once, not after
                 * the pieces staged on that stream (pc_rt_holds_for_stream). */
                st->how = c->how == PC_COPY_SYNC_PTDS && p.h2d ? PC_COPY_ASYNC_PTSZ : c->how;
                st->stream = c->how == PC_COPY_SYNC_PTDS && p.h2d ? cudaStreamPerThread : c->stream;
                return PC_STAGE_DONE;
            }
            if (elsewhere)
                PC_STAT_INC(stage_busy);
        } else {
            PC_STAT_INC(stage_busy);
        }
    }
    return PC_STAGE_PASS;
}

/* A pageable copy left to the runtime: timed, for the report's estimate. */
void pc_stage_passed(const struct pc_staged *st, size_t n, uint64_t ns)
{
    if (st->fresh_asked)     /* the runtime's own faults are not the next source's */
        pc_stage_minflt_mark();
    if (st->h2d) {
        PC_STAT_INC(stage_h2d_driver_calls);
        PC_STAT_ADD(stage_h2d_driver_bytes, n);
        PC_STAT_ADD(stage_h2d_driver_ns, ns);
    } else {
        PC_STAT_INC(stage_d2h_driver_calls);
        PC_STAT_ADD(stage_d2h_driver_bytes, n);
        PC_STAT_ADD(stage_d2h_driver_ns, ns);
    }
}

/* The end of a staged copy, the rest (if any) copied by the runtime. */
void pc_stage_done(const struct pc_staged *st, size_t n)
{
    if (st->redo < n) {
        if (st->elsewhere)
            PC_STAT_INC(stage_busy);
        else
            PC_STAT_INC(stage_fallbacks);
    }
    if (st->fresh_asked)     /* the ring's first chunk, say: not the next source's faults */
        pc_stage_minflt_mark();
    if (st->h2d) {
        PC_STAT_INC(stage_h2d_calls);
        PC_STAT_ADD(stage_h2d_bytes, n);
        PC_STAT_ADD(stage_h2d_ns, pc_now_ns() - st->t0);
    } else {
        PC_STAT_INC(stage_d2h_calls);
        PC_STAT_ADD(stage_d2h_bytes, n);
        PC_STAT_ADD(stage_d2h_ns, pc_now_ns() - st->t0);
    }
}

void pc_stage_forget_device(int dev)
{
    if (pc_state.forked_child || dev < 0 || dev >= PC_STAGE_MAX_DEV)
        return;
    pc_order_forget(dev);
    pc_ring_forget(dev);
    pc_native_forget(dev);
}

size_t pc_stage_shed(void)
{
    return pc_ring_shed();
}

uint64_t pc_stage_native_devices(void)
{
    return pc_native_devices();
}

void pc_stage_after_fork_child(void)
{
    /* The parent's slots and events are not the child's to use or free.  The
     * child passes through anyway (pc_state.forked_child); this only leaves
     * clean state behind. */
    pc_ring_after_fork_child();
    pc_order_after_fork_child();
    pc_native_forget(-1);
    pc_share_after_fork_child();
}

void pc_stage_at_exit(void)
{
    pc_share_at_exit();
}

int pc_stage_parallel(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held, int wide)
{
    return pc_share_parallel(fn, arg, n, lock_held, wide);
}
