/* cache_cuda.c - the CUDA back-end of the cache's pool (cache_cuda.h). */
#include "config.h"
#include <stdint.h>
#include <time.h>
#include "api/cache_cuda.h"
#include "stage/fastalloc.h"
#include "stage/fastdrv.h"
#include "stage/stage.h"
#include "core/cache.h"
#include "core/fence.h"
#include "core/hostkind.h"
#include "diag/diag.h"
#include "real/real.h"
#include "util/stats.h"
#include "util/limits.h"
#include "util/options.h"

__thread struct pc_alloc_call *pc_tls_alloc __attribute__((tls_model("initial-exec")));

/* A failed runtime attempt replaces the program's pending last error with
 * 2, and the runtime has no call that puts it back; a plain run, with no
 * idle blocks held, would have succeeded and left it pending (issue 15,
 * D5).  So while an error is pending every attempt of the pool's (the
 * first, and those after trimming, shedding the rings, at the exact size)
 * goes through the driver (cuMemHostAlloc: the same flag bits, no last
 * error), which needs a current context; if all fail, pc_alloc's
 * passthrough asks the runtime, whose failure the plain run would share.
 * Without a context (an error from before the runtime made one current, as
 * cudaSetDevice(99) leaves) or the driver's call (from libcuda, or where
 * none is loaded, the simulated device, the runtime's entry point:
 * fastdrv.c), nothing is tried: the pool
 * makes room first (an idle block of a larger size, with no CUDA call at
 * all; else the idle blocks released, which waits for the device, and the
 * rings' chunks shed) and then makes the one runtime attempt, at the
 * request's own pages: slower, but once per thread at most in practice,
 * since that attempt makes a context current.  Trimming whenever an error is
 * pending would cost every miss of a program that never clears its last
 * error the whole cache. */
static int pc_alloc_first_attempt(struct pc_alloc_call *c)
{
    if (!c->fl->runtime || PC_CALL_REAL(cudaPeekAtLastError) == cudaSuccess)
        return 0;
    c->pending = 1;
    if (pc_fast_quiet_ready())
        c->quiet = 1;
    return !c->quiet;          /* 1: nothing tried, the pool makes room first */
}

static int pc_ops_alloc(void *ctx, size_t size, unsigned key, void **out)
{
    struct pc_alloc_call *c = pc_tls_alloc;
    const struct pc_flavour *fl = c ? c->fl : &pc_flavour_rt;
    int quiet = 0, err;
    uint64_t t0;

    pc_call_slow();
    /* The retry after the pool trimmed for memory: the fast blocks it
     * released must be unmapped (the reaper does that) before the memory
     * is there again. */
    if (c && c->attempts > 0)
        pc_fast_drain();
    /* A fast block first (PINCACHE_FAST_ALLOC): driver calls only, so a
     * failure leaves nothing behind and the real call below is made as if
     * it had not been tried. */
    if (pc_fast_alloc(out, size, pc_key_flags(key), (int)PC_KEY_HOME(key), 0) == 0) {
        pc_call_note(PC_NOTE_MISS);
        pc_hostkind_changed();     /* copies' pages remembered as pageable: core/hostkind.h */
        return 0;
    }
    if (c && c->attempts++ == 0 && pc_alloc_first_attempt(c))
        return PC_POOL_ROOM_FIRST;
    quiet = c && c->quiet;
    t0 = pc_now_ns();
    err = quiet ? (int)pc_fast_quiet_alloc(out, size, pc_key_flags(key)) : fl->alloc(out, size, pc_key_flags(key), 0);
    PC_STAT_INC(real_alloc_calls);
    PC_STAT_ADD(real_alloc_ns, pc_now_ns() - t0);
    pc_call_note(PC_NOTE_MISS | PC_NOTE_REAL);
    if (c)
        c->failed_quiet = err != 0 && quiet;
    if (err != 0) {
        PC_STAT_INC(real_alloc_fail);
        if (c && fl->runtime && !quiet && !c->pending)
            c->failed_loud = 1;
        return err;
    }
    PC_STAT_ADD(real_alloc_bytes, size);
    pc_hostkind_changed();
    return 0;
}

static void pc_ops_release(void *ctx, void *ptr, size_t size)
{
    uint64_t t0;

    pc_call_slow();
    if (pc_fast_release(ptr))
        return;
    t0 = pc_now_ns();
    /* Runtime and driver blocks are the same driver allocations; with no
     * runtime in the process (static cudart) the driver frees them. */
    if (PC_REAL(cudaFreeHost))
        PC_CALL_REAL(cudaFreeHost, ptr);
    else
        PC_CALL_DRV(cuMemFreeHost, ptr);
    PC_STAT_INC(real_free_calls);
    PC_STAT_ADD(real_free_ns, pc_now_ns() - t0);
}

static size_t pc_ops_shed(void *ctx)
{
    pc_call_slow();
    return pc_stage_shed();
}
static int pc_ops_fence_known(void *ctx, uint64_t seq) { return pc_fence_known(seq); }
static int pc_ops_fence_poll(void *ctx, uint64_t seq) { return pc_fence_poll(seq); }
static int pc_ops_device_idle(void *ctx)
{
    pc_call_slow();
    return pc_fence_idle();
}
static int pc_ops_fence_wait(void *ctx, uint64_t seq, uint64_t ns)
{
    pc_call_slow();
    return pc_fence_wait(seq, ns);
}

/* How long a miss waits for the device to finish before it leaves the
 * headroom's trim to the next free: a tenth of the cheapest real
 * allocation (0.53 ms on the H200), and longer than the short copies a
 * variable-size workload queues between allocations. */
#define PC_QUIET_WAIT_NS 50000u
static int pc_ops_device_quiet(void *ctx)
{
    pc_call_slow();
    return pc_fence_quiet(PC_QUIET_WAIT_NS);
}

/* Idle blocks near a memory limit (util/limits.h).  Plainly a free gives
 * its memory back; cached, it stays charged, and the program's next
 * allocation of its own (a page fault) could meet the OOM killer where
 * plainly it fitted.  So the cache keeps idle bytes only within what
 * pincache may take of what the limit would leave plainly (what it leaves
 * now, plus the idle bytes): the rest goes, at the next free, or at a
 * miss with the device quiet.  The limits are read at most every
 * PC_MEM_CHECK_NS (about 15 us a read where one exists), so a free asks a
 * coarse clock and nothing more in between; a program that grows its own
 * memory by more than the spare in less than that, with no free between,
 * is not seen in time. */
#define PC_MEM_CHECK_NS 100000000ull
static uint64_t pc_mem_next_ns;        /* atomic: the coarse clock's time of the next read */
static long pc_mem_plain_left = PC_LIMIT_NONE;   /* atomic: what the limit would leave plainly */

static size_t pc_ops_mem_allow(void *ctx, size_t cached)
{
    struct timespec ts;
    uint64_t now, next = __atomic_load_n(&pc_mem_next_ns, __ATOMIC_RELAXED);
    long left, spare;

    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (now >= next && __atomic_compare_exchange_n(&pc_mem_next_ns, &next, now + PC_MEM_CHECK_NS, 0,
                                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        pc_call_slow();
        left = pc_limits_memory(pc_opt.test_limits_root);
        if (left != PC_LIMIT_NONE)
            left = (size_t)left > (size_t)LONG_MAX - cached ? LONG_MAX - 1 : left + (long)cached;
        __atomic_store_n(&pc_mem_plain_left, left, __ATOMIC_RELAXED);
    }
    left = __atomic_load_n(&pc_mem_plain_left, __ATOMIC_RELAXED);
    if (left == PC_LIMIT_NONE)
        return SIZE_MAX;
    spare = pc_limits_memory_spare(left);
    return spare > 0 ? (size_t)spare : 0;
}

const struct pc_pool_ops pc_cache_cuda_ops = {
    .alloc = pc_ops_alloc,
    .release = pc_ops_release,
    .fence_known = pc_ops_fence_known,
    .fence_poll = pc_ops_fence_poll,
    .device_idle = pc_ops_device_idle,
    .fence_wait = pc_ops_fence_wait,
    .device_quiet = pc_ops_device_quiet,
    .mem_allow = pc_ops_mem_allow,
    .shed = pc_ops_shed,
    .oom_error = cudaErrorMemoryAllocation,
};
