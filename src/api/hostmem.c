/* hostmem.c - the host-memory API's policy (hostmem.h): which calls the
 * cache serves, which go to the runtime, and how errors stay identical to
 * the runtime's.  The real calls of each flavour are in flavour.c, the
 * pool's own CUDA operations in cache_cuda.c. */
#include "config.h"
#include <pthread.h>
#include "api/hostmem.h"
#include "api/cache_cuda.h"
#include "stage/fastalloc.h"
#include "stage/fastdrv.h"
#include "stage/ownmem.h"
#include "api/flavour.h"
#include "api/streams.h"
#include "util/state.h"
#include "util/options.h"
#include "util/stats.h"
#include "diag/diag.h"
#include "core/fence.h"
#include "core/cache.h"
#include "core/pool.h"
#include "core/park.h"
#include "core/hostkind.h"
#include "real/real.h"

/* A pageable address that is never pinned.  Asking the runtime about it
 * produces exactly the error (and last-error state) the runtime gives for a
 * pointer it does not know, which is what a block the program already freed
 * would be without pincache. */
static char pc_foreign_anchor[64];

/* A block's key: its flags (pc_flags_key, cache_cuda.h) and its home, the
 * device whose context allocates it (drv: a driver-API call, whose context
 * is the current one).  A block belongs to the context that allocated it,
 * Portable or not: cudaPointerGetAttributes names that device, and
 * resetting it frees the block, so a block of device 0 handed to a program
 * that asked with device 1 current would answer device 0 and die with
 * device 0's context.  -1: pass through (bad flags, no device or context:
 * the real call gives the error).  The device is asked here rather than
 * through the flavour table: every cache hit asks, and the table would add
 * a call to it; the runtime's answer is learned once per current context
 * (pc_fence_current_device), so a hit asks cuCtxGetCurrent only. */
static int pc_block_key(unsigned int flags, int drv, unsigned *key)
{
    CUdevice d = 0;
    int dev = 0;

    if (pc_flags_key(flags, key) != 0 || pc_ctx_created_current())
        return -1;
    if (drv ? PC_CALL_DRV(cuCtxGetDevice, &d) != CUDA_SUCCESS : pc_fence_current_device(&dev) != 0)
        return -1;
    dev = drv ? (int)d : dev;
    if (dev < 0 || dev >= PC_POOL_NHOME)
        return -1;
    *key = PC_KEY(*key, dev);
    return 0;
}

/* The block the cache last handed this thread, until this thread frees it
 * (a hit pair's block): its free skips the pool's first look, a lock and a
 * lookup, and learns from pc_pool_free what that look would have said.  A
 * block freed or dropped meanwhile (a double free, a device reset) comes
 * out as it would have, with a fence recorded first. */
static __thread void *pc_tls_mine __attribute__((tls_model("initial-exec")));

/* The thread's front end to the cache (core/park.h): the block it was
 * handed last and the one it parked.  It joins the pool's list at its
 * first park, and a thread's exit gives its parked block back (a key's
 * destructor). */
static __thread struct pc_park pc_tls_park __attribute__((tls_model("initial-exec")));
static pthread_key_t pc_park_key;
static int pc_park_key_ok;
static pthread_once_t pc_park_once = PTHREAD_ONCE_INIT;

static void pc_park_exit(void *k)
{
    pc_park_leave(&pc_cache, k);
}

static void pc_park_key_make(void)
{
    pc_park_key_ok = pthread_key_create(&pc_park_key, pc_park_exit) == 0;
}

/* Park p, this thread's block freed with its fence complete: 0, or -1 (the
 * pool's way).  A thread whose exit could not give it back parks nothing. */
static int pc_park_mine(void *p)
{
    struct pc_park *k = &pc_tls_park;

    if (!k->joined) {
        pthread_once(&pc_park_once, pc_park_key_make);
        if (!pc_park_key_ok || pthread_setspecific(pc_park_key, k) != 0) {
            k->mine = NULL;
            return -1;
        }
        pc_park_join(&pc_cache, k);
    }
    return pc_park_put(&pc_cache, k, p);
}

static int pc_caching(void)
{
    return pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child && !pc_fence_broken;
}

/* The real allocation for a call the cache does not serve: bad input gets
 * exactly the real function's answer.
 *
 * Inside a stream capture (no fences then: the cache is not used), out of
 * pinned memory (2, in both APIs) while the cache holds idle blocks or the
 * staging rings hold chunks: the refusal for memory shows that the capture
 * allows this thread's call, and every call a release makes (cudaFreeHost,
 * cudaHostUnregister, cuEventQuery of a context-wide event,
 * cudaEventSynchronize) is allowed or refused under that same rule,
 * measured (dev/probe/capfree.cu, docs/runtime-facts.md), the capture
 * surviving both the refusal for memory and the releases.  So room is made
 * and the allocation tried again, as out of a capture (core/pool.c), on
 * this thread.
 *
 * With an error pending, which a failed runtime call would replace, the
 * driver's cuMemHostAlloc is asked first (pc_fast_quiet_alloc: the same
 * block, the last error untouched; refused for memory under the same rule,
 * capfree's oom_drv), and only for a request the runtime would not refuse
 * as bad input; whatever the driver does not give, the runtime's own call
 * answers: after the driver's refusal by the capture (900, the capture
 * invalidated as the runtime's refusal would have) the runtime refuses too,
 * 900 and its last error 900 (capfree's drv_then_rt). */
static int pc_alloc_real_pending(const struct pc_flavour *fl, void **p, size_t size, unsigned int flags,
                                 int alloc_host)
{
    unsigned int drv_flags = alloc_host ? 0 : flags;   /* cuMemAllocHost's */
    CUresult r = pc_fast_quiet_alloc(p, size, drv_flags);

    if (r == CUDA_SUCCESS)
        return 0;
    if (r == CUDA_ERROR_OUT_OF_MEMORY && pc_cache_make_room()) {
        PC_STAT_INC(capture_oom_retries);
        if (pc_fast_quiet_alloc(p, size, drv_flags) == CUDA_SUCCESS)
            return 0;
    }
    return fl->alloc(p, size, flags, alloc_host);
}

static int pc_alloc_real(const struct pc_flavour *fl, void **p, size_t size, unsigned int flags, int alloc_host)
{
    int room = pc_caching() && pc_fence_capturing() > 0 && pc_cache_holds_room();
    unsigned key;
    int err;

    if (room && fl->runtime && PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        return p && size && (alloc_host || pc_flags_key(flags, &key) == 0)
                   ? pc_alloc_real_pending(fl, p, size, flags, alloc_host)
                   : fl->alloc(p, size, flags, alloc_host);
    err = fl->alloc(p, size, flags, alloc_host);
    if (!room || err != cudaErrorMemoryAllocation || !pc_cache_make_room())
        return err;
    PC_STAT_INC(capture_oom_retries);
    if (fl->runtime)
        PC_CALL_REAL(cudaGetLastError);     /* ours: nothing was pending */
    return fl->alloc(p, size, flags, alloc_host);
}

static int pc_alloc_passthrough(const struct pc_flavour *fl, void **p, size_t size, unsigned int flags,
                                int alloc_host)
{
    uint64_t t0;
    int err;

    pc_call_slow();
    t0 = pc_now_ns();
    err = pc_alloc_real(fl, p, size, flags, alloc_host);

    PC_STAT_INC(alloc_passthrough);
    pc_call_note(PC_NOTE_REAL);
    if (err == 0)
        pc_hostkind_changed();    /* pinned memory the cache does not know */
    if (pc_state.mode == PC_MODE_OBSERVE) {
        PC_STAT_INC(real_alloc_calls);
        PC_STAT_ADD(real_alloc_ns, pc_now_ns() - t0);
        if (err == 0)
            PC_STAT_ADD(real_alloc_bytes, size);
    }
    return err;
}

static int pc_alloc(const struct pc_flavour *fl, void **p, size_t size, unsigned int flags, int alloc_host)
{
    struct pc_alloc_call c = { .fl = fl };
    unsigned key;
    int hit, err;

    pc_mark_used();
    if (pc_state.mode == PC_MODE_OFF)
        return fl->alloc(p, size, flags, alloc_host);
    PC_STAT_INC(alloc_calls);
    PC_STAT_ADD(alloc_bytes, size);
    /* NULL, size 0 and bad flags: the real function's own answer is the
     * right one.  During a graph capture too: the runtime refuses an
     * allocation that the capture prohibits, and invalidates the capture
     * (measured on the H200); a block from the cache would hide both, and
     * the cache's event queries could be refused in turn.  And in a broken
     * context: the sticky error, not a block. */
    if (!pc_caching() || !p || size == 0 || pc_block_key(flags, !fl->runtime, &key) != 0 || pc_fence_capturing() > 0 ||
        !pc_fence_context_ok())
        return pc_alloc_passthrough(fl, p, size, flags, alloc_host);
    if (pc_park_take(&pc_cache, &pc_tls_park, size, key, p) == 0) {
        pc_tls_mine = *p;
        pc_call_note(PC_NOTE_HIT);
        return 0;
    }
    pc_tls_alloc = &c;
    err = pc_pool_alloc_for(&pc_cache, &pc_tls_park, size, key, p, &hit);
    pc_tls_alloc = NULL;
    if (err == 0)
        pc_tls_mine = *p;
    if (err == 0 && hit)
        pc_call_note(PC_NOTE_HIT);
    if (err < 0)                      /* too large to cache */
        return pc_alloc_passthrough(fl, p, size, flags, alloc_host);
    if (err == 0 && c.failed_loud)
        PC_CALL_REAL(cudaGetLastError);   /* the retry after trimming worked */
    if (err != 0 && c.failed_quiet)   /* the runtime never saw the failure: its own answer */
        return pc_alloc_passthrough(fl, p, size, flags, alloc_host);
    return err;
}

cudaError_t pc_host_alloc(void **p, size_t size, unsigned int flags)
{
    return (cudaError_t)pc_alloc(&pc_flavour_rt, p, size, flags, 0);
}

CUresult pc_drv_host_alloc(void **pp, size_t size, unsigned int flags, int alloc_host)
{
    return (CUresult)pc_alloc(&pc_flavour_drv, pp, size, flags, alloc_host);
}

/* The real free for a pointer the cache does not keep, counted the same
 * whichever API it came through. */
static int pc_free_passthrough(const struct pc_flavour *fl, void *p)
{
    uint64_t t0, dt;
    int busy = 0, err;

    pc_call_slow();
    if (pc_state.mode == PC_MODE_OBSERVE && p && !pc_state.forked_child)
        busy = pc_fence_busy_now();
    t0 = pc_now_ns();
    err = fl->free(p);
    dt = pc_now_ns() - t0;
    PC_STAT_INC(free_passthrough);
    PC_STAT_INC(real_free_calls);
    PC_STAT_ADD(real_free_ns, dt);
    pc_call_note(busy ? PC_NOTE_REAL | PC_NOTE_BUSY : PC_NOTE_REAL);
    if (busy) {
        PC_STAT_INC(would_sync);
        PC_STAT_ADD(would_sync_ns, dt);
    }
    return err;
}

enum pc_free_how { PC_FREE_CACHED, PC_FREE_FOREIGN, PC_FREE_INVALID, PC_FREE_REAL, PC_FREE_FAST };

/* A fast block (stage/fastalloc.h) whose free cannot be kept: no fence (a
 * capture that prohibits frees, a broken context, a created context), the
 * cache not caching any more, or a block the pool never knew.  The program
 * gets what the real free of a cudaHostAlloc block of its device answers
 * now (pc_fast_free_answer_for): refused by the capture (and the capture
 * invalidated), the sticky error, or done, in which case the fast block
 * goes too.  Refused, it stays the program's, as a real block would. */
static int pc_free_fast(const struct pc_flavour *fl, void *p)
{
    int err;

    pc_call_slow();
    err = pc_fast_free_answer_for(p, fl->free);
    PC_STAT_INC(free_passthrough);
    if (err == 0) {
        (void)pc_pool_forget(&pc_cache, p);
        pc_fast_release(p);
    }
    return err;
}

/* A free of a pointer that is no live block of the cache. */
static enum pc_free_how pc_not_live(void *p, enum pc_block_state st)
{
    /* pincache's own memory (a ring's chunk, a witness) answers as nothing
     * pinned would; a fast block the pool never knew (its bookkeeping
     * failed) is never the runtime's to free. */
    if (st == PC_BLOCK_NONE && !pc_own_contains(p))
        return pc_fast_contains(p) == 2 ? PC_FREE_FAST : PC_FREE_FOREIGN;
    PC_STAT_INC(free_invalid);
    return PC_FREE_INVALID;
}

/* Take a block back into the cache if it is ours and live.  PC_FREE_REAL:
 * it was ours but the context is broken or no fence could be had, so it was
 * dropped from the cache and the caller must free it for real (with the
 * runtime's full wait, or its sticky error). */
static enum pc_free_how pc_take_back(void *p)
{
    enum pc_block_state st;
    uint64_t seq = 0;
    int busy = 0, mine = p == pc_tls_mine;

    if (mine)
        pc_tls_mine = NULL;
    else if ((st = pc_pool_state(&pc_cache, p, 0)) != PC_BLOCK_LIVE)
        return pc_not_live(p, st);
    /* No fence from a created context: its events would die with it, and
     * its context-wide event would not cover the primary context's work.
     * A broken context fails the fence (pc_fence_record asks), and the
     * block goes to the real free, whose sticky error is the answer. */
    if (pc_ctx_created_current() ||
        (pc_opt.test_no_fences ? pc_fence_capturing() == 0 && !pc_fence_context_ok() : pc_fence_record(&seq, &busy) != 0)) {
        if (pc_fast_contains(p) == 2)
            return PC_FREE_FAST;
        if (pc_pool_forget(&pc_cache, p) == 0)
            return PC_FREE_REAL;
        return mine ? pc_not_live(p, pc_pool_state(&pc_cache, p, 0)) : PC_FREE_INVALID;
    }
    /* Nothing to wait for: the thread keeps it for its next allocation. */
    if (mine && seq == 0 && !busy && pc_park_mine(p) == 0) {
        PC_STAT_INC(free_cached);
        pc_call_note(PC_NOTE_HIT);
        return PC_FREE_CACHED;
    }
    if ((st = pc_pool_free(&pc_cache, p, seq)) != PC_BLOCK_LIVE) {
        if (mine)
            return pc_not_live(p, st);
        PC_STAT_INC(free_invalid);   /* lost a race with another free of p */
        return PC_FREE_INVALID;
    }
    PC_STAT_INC(free_cached);
    pc_call_note(busy ? PC_NOTE_HIT | PC_NOTE_AVOIDED : PC_NOTE_HIT);
    if (busy)
        PC_STAT_INC(syncs_avoided);
    pc_pool_enforce_cap(&pc_cache);
    return PC_FREE_CACHED;
}

static int pc_free(const struct pc_flavour *fl, void *p)
{
    pc_mark_used();
    if (pc_state.mode == PC_MODE_OFF)
        return fl->free(p);
    PC_STAT_INC(free_calls);
    if (!pc_caching() || !p) {
        if (pc_own_contains(p)) {
            pc_call_slow();
            return fl->free(pc_foreign_anchor);
        }
        return p && pc_fast_contains(p) == 2 ? pc_free_fast(fl, p) : pc_free_passthrough(fl, p);
    }
    switch (pc_take_back(p)) {
    case PC_FREE_CACHED:  return 0;
    case PC_FREE_INVALID: pc_call_slow(); return fl->free(pc_foreign_anchor);
    case PC_FREE_FOREIGN:
    case PC_FREE_REAL:    break;
    case PC_FREE_FAST:    return pc_free_fast(fl, p);
    }
    return pc_free_passthrough(fl, p);
}

cudaError_t pc_free_host(void *p)
{
    return (cudaError_t)pc_free(&pc_flavour_rt, p);
}

/* A program may free a runtime block through the driver (cuMemFreeHost) and
 * the runtime's own driver calls never come through here (cudart reaches the
 * driver through cuGetProcAddress pointers), so nothing is counted twice. */
CUresult pc_drv_free_host(void *p)
{
    return (CUresult)pc_free(&pc_flavour_drv, p);
}

/* A pointer into a block the program has freed, or into pincache's own
 * pinned memory, must look foreign. */
static int pc_looks_foreign(const void *p)
{
    return p && ((pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child &&
                  pc_pool_state(&pc_cache, p, 1) == PC_BLOCK_IDLE) ||
                 pc_own_contains(p));
}

void *pc_host_as_seen(void *p)
{
    return pc_looks_foreign(p) ? pc_foreign_anchor : p;
}

/* Blocks are cached apart by Portable, and the bit is answered from the
 * block's key, the flags asked for: the H200 answers a block under 2 MiB
 * with the Portable bit of the 2 MiB chunk its driver carved it from, an
 * earlier allocation's (docs/runtime-facts.md), and the cache's blocks are
 * carved otherwise than the program's would be (a pincache(7) limit).
 * Everything else, errors included, is the real function's answer. */
static int pc_get_flags(const struct pc_flavour *fl, unsigned int *flags, void *p)
{
    int err = fl->get_flags(flags, pc_host_as_seen(p));
    int key = err == 0 && flags && pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child
            ? pc_pool_live_key(&pc_cache, p) : -1;

    if (key >= 0)
        *flags = (*flags & ~(unsigned)cudaHostAllocPortable) | ((PC_KEY_FLAGS((unsigned)key) & 1u) ? cudaHostAllocPortable : 0u);
    return err;
}

cudaError_t pc_host_get_flags(unsigned int *flags, void *p)
{
    return (cudaError_t)pc_get_flags(&pc_flavour_rt, flags, p);
}

CUresult pc_drv_host_get_flags(unsigned int *flags, void *p)
{
    return (CUresult)pc_get_flags(&pc_flavour_drv, flags, p);
}

/* The device's address of a block: the real function's answer. */
static int pc_dev_ptr(const struct pc_flavour *fl, void *pdev, void *p, unsigned int flags)
{
    return fl->dev_ptr(pdev, pc_host_as_seen(p), flags);
}

CUresult pc_drv_host_get_device_pointer(CUdeviceptr *pdev, void *p, unsigned int flags)
{
    return (CUresult)pc_dev_ptr(&pc_flavour_drv, pdev, p, flags);
}

cudaError_t pc_host_get_device_pointer(void **pdev, void *p, unsigned int flags)
{
    return (cudaError_t)pc_dev_ptr(&pc_flavour_rt, pdev, p, flags);
}

/* MAPPING_SIZE: the driver maps a cudaHostAlloc block in 2 MiB units and
 * answers its size rounded up to them (H200, tests/sim/fastobs, run 58: 2
 * MiB for 48 and 64 KiB blocks, 4 MiB for 3 MiB, 64 MiB for 64 MiB); a fast
 * block's registration answers its own size. */
static void pc_fast_mapping_size(CUpointer_attribute attr, void *data, CUdeviceptr ptr)
{
    size_t size;

    if (attr == CU_POINTER_ATTRIBUTE_MAPPING_SIZE && data && pc_fast_size((const void *)(uintptr_t)ptr, &size))
        *(size_t *)data = (size + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
}

CUresult pc_drv_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    CUresult r;

    if (pc_looks_foreign((const void *)(uintptr_t)ptr))
        return PC_CALL_DRV(cuPointerGetAttribute, data, attr, (CUdeviceptr)(uintptr_t)pc_foreign_anchor);
    r = PC_CALL_DRV(cuPointerGetAttribute, data, attr, ptr);
    if (r == CUDA_SUCCESS)
        pc_fast_mapping_size(attr, data, ptr);
    return r;
}

CUresult pc_drv_pointer_get_attributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr)
{
    CUresult r;

    if (pc_looks_foreign((const void *)(uintptr_t)ptr))
        return PC_CALL_DRV(cuPointerGetAttributes, n, attrs, data, (CUdeviceptr)(uintptr_t)pc_foreign_anchor);
    r = PC_CALL_DRV(cuPointerGetAttributes, n, attrs, data, ptr);
    for (unsigned int i = 0; r == CUDA_SUCCESS && attrs && data && i < n; i++)
        pc_fast_mapping_size(attrs[i], data[i], ptr);
    return r;
}

cudaError_t pc_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p)
{
    cudaError_t err;

    if (!pc_looks_foreign(p))
        return PC_CALL_REAL(cudaPointerGetAttributes, a, p);
    err = PC_CALL_REAL(cudaPointerGetAttributes, a, pc_foreign_anchor);
    if (err == cudaSuccess && a) {
        if (a->hostPointer == (void *)pc_foreign_anchor)
            a->hostPointer = (void *)p;
        if (a->devicePointer == (void *)pc_foreign_anchor)
            a->devicePointer = (void *)p;
    }
    return err;
}
