/* hostmem.c - the host-memory API's policy: which calls the cache serves,
 * which go to the runtime, and how errors stay identical to the runtime's. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uthash.h>
#include "api/api.h"
#include "util/state.h"
#include "diag/diag.h"
#include "real/drv_ext.h"
#include "core/fence.h"
#include "util/log.h"
#include "util/options.h"
#include "core/cache.h"
#include "core/pool.h"
#include "real/real.h"
#include "util/stats.h"
#include "stage/stage.h"

/* Registered ranges marked MADV_DONTFORK (PINCACHE_REGISTER_DONTFORK). */
struct pc_dontfork {
    void *key;                 /* the pointer the program registered */
    char *start;               /* its whole pages, marked */
    size_t len;
    size_t size;               /* its registered size, accounted */
    UT_hash_handle hh;
};
static pthread_mutex_t pc_dontfork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pc_dontfork *pc_dontfork_map;


/* A pageable address that is never pinned.  Asking the runtime about it
 * produces exactly the error (and last-error state) the runtime gives for a
 * pointer it does not know, which is what a block the program already freed
 * would be without pincache. */
static char pc_foreign_anchor[64];

/* --- one policy per operation, for the runtime's calls and the driver's ---
 *
 * Each operation is written once; a flavour names the real functions that
 * answer for it.  A runtime call and its driver twin written out twice had
 * drifted (observe mode counted no driver frees: issue 15, D9).  Driver and
 * runtime share the numbers the policy tells apart and the flag bits, so
 * results travel as int.  Only the runtime keeps a per-thread last error. */
_Static_assert((int)cudaSuccess == (int)CUDA_SUCCESS &&
               (int)cudaErrorMemoryAllocation == (int)CUDA_ERROR_OUT_OF_MEMORY,
               "driver and runtime share these codes");
_Static_assert(cudaHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE && cudaHostAllocMapped == CU_MEMHOSTALLOC_DEVICEMAP &&
               cudaHostAllocWriteCombined == CU_MEMHOSTALLOC_WRITECOMBINED,
               "driver and runtime share these flags");

struct pc_flavour {
    int runtime;               /* the runtime: a per-thread last error */
    /* alloc_host: cuMemAllocHost (the runtime's cudaMallocHost(p, n) is
     * cudaHostAlloc(p, n, 0)) */
    int (*alloc)(void **p, size_t size, unsigned int flags, int alloc_host);
    int (*free)(void *p);
    int (*get_flags)(unsigned int *flags, void *p);
    int (*dev_ptr)(void *pdev, void *p, unsigned int flags);   /* void ** or CUdeviceptr * */
    int (*reg)(void *p, size_t size, unsigned int flags);
    int (*unreg)(void *p);
};

static int pc_rt_alloc(void **p, size_t size, unsigned int flags, int alloc_host)
{
    (void)alloc_host;
    return PC_CALL_REAL(cudaHostAlloc, p, size, flags);
}
static int pc_rt_free(void *p) { return PC_CALL_REAL(cudaFreeHost, p); }
static int pc_rt_get_flags(unsigned int *f, void *p) { return PC_CALL_REAL(cudaHostGetFlags, f, p); }
static int pc_rt_dev_ptr(void *d, void *p, unsigned int f) { return PC_CALL_REAL(cudaHostGetDevicePointer, d, p, f); }
static int pc_rt_reg(void *p, size_t n, unsigned int f) { return PC_CALL_REAL(cudaHostRegister, p, n, f); }
static int pc_rt_unreg(void *p) { return PC_CALL_REAL(cudaHostUnregister, p); }

static int pc_drv_alloc(void **p, size_t size, unsigned int flags, int alloc_host)
{
    return alloc_host ? PC_CALL_DRV(cuMemAllocHost_v2, p, size) : PC_CALL_DRV(cuMemHostAlloc, p, size, flags);
}
static int pc_drv_free(void *p) { return PC_CALL_DRV(cuMemFreeHost, p); }
static int pc_drv_get_flags(unsigned int *f, void *p) { return PC_CALL_DRV(cuMemHostGetFlags, f, p); }
static int pc_drv_dev_ptr(void *d, void *p, unsigned int f)
{
    return PC_CALL_DRV(cuMemHostGetDevicePointer_v2, (CUdeviceptr *)d, p, f);
}
static int pc_drv_reg(void *p, size_t n, unsigned int f) { return PC_CALL_DRV(cuMemHostRegister_v2, p, n, f); }
static int pc_drv_unreg(void *p) { return PC_CALL_DRV(cuMemHostUnregister, p); }

static const struct pc_flavour pc_rt = {
    1, pc_rt_alloc, pc_rt_free, pc_rt_get_flags, pc_rt_dev_ptr, pc_rt_reg, pc_rt_unreg,
};
static const struct pc_flavour pc_drv = {
    0, pc_drv_alloc, pc_drv_free, pc_drv_get_flags, pc_drv_dev_ptr, pc_drv_reg, pc_drv_unreg,
};

/* The allocation being served on this thread, for the pool's alloc
 * operation: whose real call makes new blocks, and what its attempts did to
 * the runtime's last error. */
struct pc_alloc_call {
    const struct pc_flavour *fl;
    int attempts;              /* real allocations made so far */
    int pending;               /* the program had an error pending */
    int quiet;                 /* the first attempt goes through the driver */
    int failed_loud;           /* a runtime attempt failed with nothing pending */
    int failed_quiet;          /* the last attempt failed through the driver */
};
static __thread struct pc_alloc_call *pc_tls_alloc;

/* The cache keeps blocks apart by their flags, packed into 0..7: Portable,
 * WriteCombined and Mapped, so that a block is made by exactly the call the
 * program made.  (cudaHostGetFlags reports Mapped for every block, measured,
 * and no other difference between a flags-0 block and a Mapped one was seen
 * on the H200, tests/probe/hostflags.cu; keyed apart, none can matter.)
 * Unknown flag bits go to the runtime, which rejects them. */
static int pc_flags_key(unsigned int flags, unsigned *key)
{
    const unsigned known = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
    if (flags & ~known)
        return -1;
    *key = (flags & cudaHostAllocPortable) | ((flags & cudaHostAllocWriteCombined) ? 2u : 0u) |
           ((flags & cudaHostAllocMapped) ? 4u : 0u);
    return 0;
}

/* Contexts the program created (cuCtxCreate), live.  While one is current
 * pincache neither serves allocations nor fences frees: its blocks belong
 * to it, and its events and streams die with it.  Read lock-free when
 * there are none (the common case: no cuCtxGetCurrent at all). */
#define PC_MAX_CREATED 64
static pthread_mutex_t pc_created_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext pc_created[PC_MAX_CREATED];   /* pc_created_lock */
static int pc_ncreated;                        /* atomic; written under pc_created_lock */
static int pc_created_lost;                    /* more than PC_MAX_CREATED: every context counts */

static int pc_ctx_created_current(void)
{
    CUcontext c = NULL;
    int found;

    if (!__atomic_load_n(&pc_ncreated, __ATOMIC_ACQUIRE))
        return 0;
    if (PC_CALL_DRV(cuCtxGetCurrent, &c) != CUDA_SUCCESS || !c)
        return 0;
    pthread_mutex_lock(&pc_created_lock);
    found = pc_created_lost;
    for (int i = 0; i < PC_MAX_CREATED && !found; i++)
        found = pc_created[i] == c;
    pthread_mutex_unlock(&pc_created_lock);
    return found;
}

static void pc_created_set(CUcontext old, CUcontext ctx)
{
    int i;

    pthread_mutex_lock(&pc_created_lock);
    for (i = 0; i < PC_MAX_CREATED && pc_created[i] != old; i++)
        ;
    if (i < PC_MAX_CREATED) {
        pc_created[i] = ctx;
        __atomic_store_n(&pc_ncreated, pc_ncreated + (ctx ? 1 : -1), __ATOMIC_RELEASE);
    } else if (ctx) {
        pc_created_lost = 1;
        __atomic_store_n(&pc_ncreated, pc_ncreated + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&pc_created_lock);
}

/* ... and by their home, the device whose context allocates them (drv: a
 * driver-API call, whose context is the current one).  A block belongs to
 * the context that allocated it, Portable or not: cudaPointerGetAttributes
 * names that device, and resetting it frees the block, so a block of
 * device 0 handed to a program that asked with device 1 current would
 * answer device 0 and die with device 0's context.  -1: pass through (bad
 * flags, no device or context: the real call gives the error). */
static int pc_block_key(unsigned int flags, int drv, unsigned *key)
{
    CUdevice d = 0;
    int dev = 0;

    if (pc_flags_key(flags, key) != 0 || pc_ctx_created_current())
        return -1;
    if (drv ? PC_CALL_DRV(cuCtxGetDevice, &d) != CUDA_SUCCESS : PC_CALL_REAL(cudaGetDevice, &dev) != cudaSuccess)
        return -1;
    dev = drv ? (int)d : dev;
    if (dev < 0 || dev >= PC_POOL_NHOME)
        return -1;
    *key = PC_KEY(*key, dev);
    return 0;
}

static unsigned int pc_key_flags(unsigned key)
{
    key = PC_KEY_FLAGS(key);
    return ((key & 1u) ? cudaHostAllocPortable : 0u) | ((key & 2u) ? cudaHostAllocWriteCombined : 0u) |
           ((key & 4u) ? cudaHostAllocMapped : 0u);
}

/* --- the pool's CUDA operations --- */

/* A failed runtime attempt replaces the program's pending last error with
 * 2, and the runtime has no call that puts it back; a plain run, with no
 * idle blocks held, would have succeeded and left it pending (issue 15,
 * D5).  So while an error is pending the first attempt goes through the
 * driver (cuMemHostAlloc: the same flag bits, no last error), which needs a
 * current context; only the retry after trimming, whose failure the plain
 * run would share, goes through the runtime.  Without a context (an error
 * from before the runtime made one current, as cudaSetDevice(99) leaves) or
 * a loaded driver, the idle blocks are released before the one runtime
 * attempt instead: slower, but once per thread at most in practice, since
 * that attempt makes a context current.  Trimming whenever an error is
 * pending would cost every miss of a program that never clears its last
 * error the whole cache. */
static void pc_alloc_first_attempt(struct pc_alloc_call *c)
{
    CUcontext cur = NULL;

    if (!c->fl->runtime || PC_CALL_REAL(cudaPeekAtLastError) == cudaSuccess)
        return;
    c->pending = 1;
    if (PC_REAL(cuMemHostAlloc) && PC_CALL_DRV(cuCtxGetCurrent, &cur) == CUDA_SUCCESS && cur)
        c->quiet = 1;
    else
        pc_pool_trim(&pc_cache, 0);
}

static int pc_ops_alloc(void *ctx, size_t size, unsigned key, void **out)
{
    struct pc_alloc_call *c = pc_tls_alloc;
    const struct pc_flavour *fl = c ? c->fl : &pc_rt;
    int quiet = 0, err;
    uint64_t t0;

    if (c && c->attempts++ == 0) {
        pc_alloc_first_attempt(c);
        quiet = c->quiet;
    }
    t0 = pc_now_ns();
    err = (quiet ? &pc_drv : fl)->alloc(out, size, pc_key_flags(key), 0);
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
    return 0;
}

static void pc_ops_release(void *ctx, void *ptr, size_t size)
{
    uint64_t t0 = pc_now_ns();
    /* Runtime and driver blocks are the same driver allocations; with no
     * runtime in the process (static cudart) the driver frees them. */
    if (PC_REAL(cudaFreeHost))
        PC_CALL_REAL(cudaFreeHost, ptr);
    else
        PC_CALL_DRV(cuMemFreeHost, ptr);
    PC_STAT_INC(real_free_calls);
    PC_STAT_ADD(real_free_ns, pc_now_ns() - t0);
}

static int pc_ops_fence_known(void *ctx, uint64_t seq) { return pc_fence_known(seq); }
static int pc_ops_fence_poll(void *ctx, uint64_t seq) { return pc_fence_poll(seq); }
static int pc_ops_device_idle(void *ctx) { return pc_fence_idle(); }
static int pc_ops_fence_wait(void *ctx, uint64_t seq, uint64_t ns) { return pc_fence_wait(seq, ns); }

static const struct pc_pool_ops pc_cuda_ops = {
    .alloc = pc_ops_alloc,
    .release = pc_ops_release,
    .fence_known = pc_ops_fence_known,
    .fence_poll = pc_ops_fence_poll,
    .device_idle = pc_ops_device_idle,
    .fence_wait = pc_ops_fence_wait,
    .oom_error = cudaErrorMemoryAllocation,
};

void pc_hostmem_init(void)
{
    pc_pool_init(&pc_cache, &pc_cuda_ops, NULL, pc_opt.max_cached,
                 (unsigned)pc_opt.headroom);
}

void pc_hostmem_after_fork_child(void)
{
    /* The parent's blocks are not ours to touch (the driver may not even map
     * them into the child).  Everything passes through from now on. */
    pthread_mutex_init(&pc_cache.lock, NULL);
    pc_fence_forget_all();
    /* The DONTFORK ranges are not mapped here: never madvise them. */
    pthread_mutex_init(&pc_dontfork_lock, NULL);
    pc_dontfork_map = NULL;
}

static int pc_caching(void)
{
    return pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child && !pc_fence_broken;
}

/* The real allocation for a call the cache does not serve: bad input gets
 * exactly the real function's answer. */
static int pc_alloc_passthrough(const struct pc_flavour *fl, void **p, size_t size, unsigned int flags,
                                int alloc_host)
{
    uint64_t t0 = pc_now_ns();
    int err = fl->alloc(p, size, flags, alloc_host);

    PC_STAT_INC(alloc_passthrough);
    pc_call_note(PC_NOTE_REAL);
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
    pc_tls_alloc = &c;
    err = pc_pool_alloc(&pc_cache, size, key, p, &hit);
    pc_tls_alloc = NULL;
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
    return (cudaError_t)pc_alloc(&pc_rt, p, size, flags, 0);
}

CUresult pc_drv_host_alloc(void **pp, size_t size, unsigned int flags, int alloc_host)
{
    return (CUresult)pc_alloc(&pc_drv, pp, size, flags, alloc_host);
}

/* The real free for a pointer the cache does not keep, counted the same
 * whichever API it came through. */
static int pc_free_passthrough(const struct pc_flavour *fl, void *p)
{
    uint64_t t0, dt;
    int busy = 0, err;

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

enum pc_free_how { PC_FREE_CACHED, PC_FREE_FOREIGN, PC_FREE_INVALID, PC_FREE_REAL };

/* Take a block back into the cache if it is ours and live.  PC_FREE_REAL:
 * it was ours but the context is broken or no fence could be had, so it was
 * dropped from the cache and the caller must free it for real (with the
 * runtime's full wait, or its sticky error). */
static enum pc_free_how pc_take_back(void *p)
{
    uint64_t seq = 0;
    int busy = 0;

    switch (pc_pool_state(&pc_cache, p, 0)) {
    case PC_BLOCK_NONE:
        return PC_FREE_FOREIGN;
    case PC_BLOCK_IDLE:
        PC_STAT_INC(free_invalid);
        return PC_FREE_INVALID;
    case PC_BLOCK_LIVE:
        break;
    }
    /* No fence from a created context: its events would die with it, and
     * its context-wide event would not cover the primary context's work.
     * A broken context fails the fence (pc_fence_record asks), and the
     * block goes to the real free, whose sticky error is the answer. */
    if (pc_ctx_created_current() ||
        (pc_opt.test_no_fences ? pc_fence_capturing() == 0 && !pc_fence_context_ok() : pc_fence_record(&seq, &busy) != 0))
        return pc_pool_forget(&pc_cache, p) == 0 ? PC_FREE_REAL : PC_FREE_INVALID;
    if (pc_pool_free(&pc_cache, p, seq) != PC_BLOCK_LIVE) {
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
    if (!pc_caching() || !p)
        return pc_free_passthrough(fl, p);
    switch (pc_take_back(p)) {
    case PC_FREE_CACHED:  return 0;
    case PC_FREE_INVALID: return fl->free(pc_foreign_anchor);
    case PC_FREE_FOREIGN:
    case PC_FREE_REAL:    break;
    }
    return pc_free_passthrough(fl, p);
}

cudaError_t pc_free_host(void *p)
{
    return (cudaError_t)pc_free(&pc_rt, p);
}

/* A program may free a runtime block through the driver (cuMemFreeHost) and
 * the runtime's own driver calls never come through here (cudart reaches the
 * driver through cuGetProcAddress pointers), so nothing is counted twice. */
CUresult pc_drv_free_host(void *p)
{
    return (CUresult)pc_free(&pc_drv, p);
}

/* Driver streams join the fences exactly as runtime ones do: a block freed
 * while a non-blocking stream is busy must wait for it (CU_STREAM_NON_BLOCKING
 * is cudaStreamNonBlocking). */
CUresult pc_drv_stream_created(CUresult r, CUstream *s, unsigned int flags)
{
    pc_stream_created(r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown, (cudaStream_t *)s, flags);
    return r;
}

/* A device whose primary context the program retains is in use (what
 * cudaSetDevice says for the runtime); a CUdevice is its ordinal. */
CUresult pc_drv_device_used(CUresult r, CUdevice dev)
{
    pc_mark_used();
    pc_device_set(r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown, (int)dev);
    return r;
}

/* A driver copy on stream s: its context's device is in use.  The context
 * is asked for its device only when it changed on this thread. */
void pc_drv_copy_seen(CUstream s)
{
    static __thread CUcontext last;
    CUcontext cur = NULL;
    CUdevice dev;

    pc_mark_used();
    if (pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return;
    pc_fence_stream_seen((cudaStream_t)s);
    if (PC_CALL_DRV(cuCtxGetCurrent, &cur) != CUDA_SUCCESS || !cur || cur == last)
        return;
    last = cur;
    if (PC_CALL_DRV(cuCtxGetDevice, &dev) == CUDA_SUCCESS)
        pc_device_set(cudaSuccess, (int)dev);
}

/* A pointer into a block the program has freed must look foreign. */
static int pc_is_idle_block(const void *p)
{
    return pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child && p &&
           pc_pool_state(&pc_cache, p, 1) == PC_BLOCK_IDLE;
}

/* Blocks are cached apart by Portable, but the H200's runtime reported a
 * Portable block we allocated as not Portable (while the program's own
 * identical call reports it), so the bit is answered from the block's key;
 * everything else, errors included, is the real function's answer. */
static int pc_get_flags(const struct pc_flavour *fl, unsigned int *flags, void *p)
{
    int err = fl->get_flags(flags, pc_is_idle_block(p) ? pc_foreign_anchor : p);
    int key = err == 0 && flags && pc_state.mode == PC_MODE_CACHE && !pc_state.forked_child
            ? pc_pool_live_key(&pc_cache, p) : -1;

    if (key >= 0)
        *flags = (*flags & ~(unsigned)cudaHostAllocPortable) | ((PC_KEY_FLAGS((unsigned)key) & 1u) ? cudaHostAllocPortable : 0u);
    return err;
}

cudaError_t pc_host_get_flags(unsigned int *flags, void *p)
{
    return (cudaError_t)pc_get_flags(&pc_rt, flags, p);
}

CUresult pc_drv_host_get_flags(unsigned int *flags, void *p)
{
    return (CUresult)pc_get_flags(&pc_drv, flags, p);
}

CUresult pc_drv_host_get_device_pointer(CUdeviceptr *pdev, void *p, unsigned int flags)
{
    return (CUresult)pc_drv.dev_ptr(pdev, pc_is_idle_block(p) ? pc_foreign_anchor : p, flags);
}

cudaError_t pc_host_get_device_pointer(void **pdev, void *p, unsigned int flags)
{
    return (cudaError_t)pc_rt.dev_ptr(pdev, pc_is_idle_block(p) ? pc_foreign_anchor : p, flags);
}

cudaError_t pc_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p)
{
    cudaError_t err;

    if (!pc_is_idle_block(p))
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

/* --- PINCACHE_REGISTER_DONTFORK ---
 *
 * Linux copies memory pinned by cudaHostRegister at every fork() (pinned
 * anonymous pages are copied at once instead of shared copy-on-write):
 * measured on the H200, fork + exit + wait took 21.7 ms with 32 MiB
 * registered and 491 ms with 1 GiB, against 2.9 ms with nothing pinned or
 * with cudaHostAlloc memory.  With the option, the whole pages of each
 * registered range are marked MADV_DONTFORK while it stays registered (the
 * partial pages at its ends are shared with other data and left alone), and
 * marked MADV_DOFORK again at unregistration, before the program may reuse
 * the memory for something else.  The ranges are in pc_dontfork_map (above). */
static void pc_dontfork_add(void *p, size_t size)
{
    static int warned;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), a, b;
    struct pc_dontfork *d, *old;

    if (!pc_opt.register_dontfork || pc_state.mode == PC_MODE_OFF || pc_state.forked_child || !p)
        return;
    a = ((uintptr_t)p + pg - 1) & ~(pg - 1);
    b = ((uintptr_t)p + size) & ~(pg - 1);
    if (b <= a || (d = calloc(1, sizeof *d)) == NULL)
        return;
    if (madvise((void *)a, b - a, MADV_DONTFORK) != 0) {
        pc_log_once(&warned, PC_LOG_WARN, "madvise(MADV_DONTFORK) failed on registered memory; fork() copies it");
        free(d);
        return;
    }
    d->key = p;
    d->start = (char *)a;
    d->len = b - a;
    d->size = size;
    pthread_mutex_lock(&pc_dontfork_lock);
    HASH_FIND_PTR(pc_dontfork_map, &p, old);
    if (old)                   /* cannot happen: the runtime refuses a second registration */
        HASH_DEL(pc_dontfork_map, old);
    HASH_ADD_PTR(pc_dontfork_map, key, d);
    pthread_mutex_unlock(&pc_dontfork_lock);
    if (old) {
        PC_GAUGE_ADD(registered_dontfork_bytes, -(int64_t)old->size);
        free(old);
    }
    PC_GAUGE_ADD(registered_dontfork_bytes, d->size);
}

static void pc_dontfork_remove(void *p)
{
    struct pc_dontfork *d;

    if (!p || !pc_opt.register_dontfork)
        return;
    pthread_mutex_lock(&pc_dontfork_lock);
    HASH_FIND_PTR(pc_dontfork_map, &p, d);
    if (d)
        HASH_DEL(pc_dontfork_map, d);
    pthread_mutex_unlock(&pc_dontfork_lock);
    if (!d)
        return;
    madvise(d->start, d->len, MADV_DOFORK);
    PC_GAUGE_ADD(registered_dontfork_bytes, -(int64_t)d->size);
    free(d);
}

/* pthread_atfork's prepare handler: what this fork will copy. */
void pc_hostmem_before_fork(void)
{
    int64_t copied;

    if (pc_state.mode == PC_MODE_OFF)
        return;
    PC_STAT_INC(forks);
    copied = (int64_t)PC_STAT_GET(registered_bytes) - (int64_t)PC_STAT_GET(registered_dontfork_bytes);
    if (copied > 0) {
        PC_STAT_INC(forks_registered);
        PC_STAT_ADD(fork_registered_bytes, copied);
    }
}

/* Registration is counted, then passed through (runtime or driver). */
static int pc_register(const struct pc_flavour *fl, void *p, size_t size, unsigned int flags)
{
    int r;

    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(register_calls);
        PC_STAT_ADD(register_bytes, size);
    }
    r = fl->reg(p, size, flags);
    if (r == 0)
        pc_dontfork_add(p, size);
    return r;
}

static int pc_unregister(const struct pc_flavour *fl, void *p)
{
    int r;

    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF)
        PC_STAT_INC(unregister_calls);
    pc_diag_probe_device();
    r = fl->unreg(p);
    if (r == 0)
        pc_dontfork_remove(p);
    return r;
}

cudaError_t pc_host_register(void *p, size_t size, unsigned int flags)
{
    return (cudaError_t)pc_register(&pc_rt, p, size, flags);
}

cudaError_t pc_host_unregister(void *p)
{
    return (cudaError_t)pc_unregister(&pc_rt, p);
}

CUresult pc_drv_host_register(void *p, size_t size, unsigned int flags)
{
    return (CUresult)pc_register(&pc_drv, p, size, flags);
}

CUresult pc_drv_host_unregister(void *p)
{
    return (CUresult)pc_unregister(&pc_drv, p);
}

/* --- streams, devices, capture: keep the fences' view complete --- */

cudaError_t pc_stream_created(cudaError_t r, cudaStream_t *s, unsigned int flags)
{
    pc_mark_used();
    if (r == cudaSuccess && s && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_created(*s, (flags & cudaStreamNonBlocking) != 0);
    return r;
}

/* A stream handle reached an interposed call (a copy). */
void pc_stream_seen(cudaStream_t s)
{
    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_seen(s);
}

void pc_stream_destroying(cudaStream_t s)
{
    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_fence_stream_destroying(s);
}

cudaError_t pc_device_set(cudaError_t r, int dev)
{
    if (r == cudaSuccess && !pc_state.forked_child)
        pc_fence_device_used(dev);
    return r;
}

/* Device dev's primary context is about to be destroyed, and with it its
 * streams, events and pinned allocations; nothing of other devices'. */
static void pc_forget_device(int dev)
{
    if (dev < 0 || dev >= PC_POOL_NHOME || pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return;
    pc_stage_forget_device(dev);
    pc_pool_drop_home(&pc_cache, (unsigned)dev);
    pc_fence_forget_device(dev);
}

/* cudaDeviceReset resets the current device's primary context only. */
cudaError_t pc_device_reset(void)
{
    int dev = -1;

    if (pc_state.mode != PC_MODE_OFF && !pc_state.forked_child) {
        pc_stage_device_reset();
        if (PC_CALL_REAL(cudaGetDevice, &dev) == cudaSuccess)
            pc_forget_device(dev);
    }
    return PC_CALL_REAL(cudaDeviceReset);
}

/* cuDevicePrimaryCtxReset(dev) is a device reset of dev (measured: the
 * blocks of its primary context are gone, their addresses handed out
 * again). */
CUresult pc_drv_primary_reset(CUdevice dev)
{
    pc_mark_used();
    pc_forget_device((int)dev);
    return PC_CALL_DRV(cuDevicePrimaryCtxReset_v2, dev);
}

/* A release destroys the primary context when it drops the last retain
 * (measured: one program release after the runtime's own start-up does),
 * which only the state after the call can tell. */
CUresult pc_drv_primary_released(CUresult r, CUdevice dev)
{
    unsigned int flags = 0;
    int active = 1;

    pc_mark_used();
    if (r == CUDA_SUCCESS && PC_CALL_DRV(cuDevicePrimaryCtxGetState, dev, &flags, &active) == CUDA_SUCCESS &&
        !active)
        pc_forget_device((int)dev);
    return r;
}

CUresult pc_drv_ctx_created(CUresult r, CUcontext *pctx)
{
    pc_mark_used();
    if (r == CUDA_SUCCESS && pctx && *pctx && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_created_set(NULL, *pctx);
    return r;
}

/* Nothing of a created context is cached, so nothing is forgotten. */
CUresult pc_drv_ctx_destroyed(CUresult r, CUcontext ctx)
{
    if (r == CUDA_SUCCESS && ctx && pc_state.mode != PC_MODE_OFF && !pc_state.forked_child)
        pc_created_set(ctx, NULL);
    return r;
}

cudaError_t pc_capture_began(cudaError_t r)
{
    if (r == cudaSuccess)
        pc_fence_capture_begin();
    return r;
}

/* A capture ends when EndCapture ends it: it counts only when the stream was
 * capturing before the call and is not after it (an EndCapture on a stream
 * that was not capturing, or one that is refused, ends nothing; counting it
 * would let fences run during another stream's capture).  The legacy
 * stream never captures, and asking about it during another stream's
 * global-mode capture would invalidate that capture, so it is not asked. */
static int pc_rt_capturing(cudaStream_t q)
{
    enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (q == 0 || q == cudaStreamLegacy || PC_CALL_REAL(cudaStreamIsCapturing, q, &st) != cudaSuccess)
        return 0;
    return st != cudaStreamCaptureStatusNone;
}

cudaError_t pc_end_capture(cudaStream_t s, cudaGraph_t *g, int ptsz)
{
    cudaStream_t q = ptsz && s == 0 ? cudaStreamPerThread : s;
    int was = pc_rt_capturing(q);
    cudaError_t r = ptsz ? PC_CALL_REAL(cudaStreamEndCapture_ptsz, s, g) : PC_CALL_REAL(cudaStreamEndCapture, s, g);

    if (was && !pc_rt_capturing(q))
        pc_fence_capture_end();
    return r;
}

/* The same for captures begun through the driver API (static cudart, XLA). */
CUresult pc_drv_capture_began(CUresult r)
{
    if (r == CUDA_SUCCESS)
        pc_fence_capture_begin();
    return r;
}

static int pc_drv_capturing(CUstream q, int ptsz)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r;

    if (q == CU_STREAM_LEGACY || (q == 0 && !ptsz))
        return 0;
    r = ptsz ? PC_CALL_DRV(cuStreamIsCapturing_ptsz, q, &st) : PC_CALL_DRV(cuStreamIsCapturing, q, &st);
    return r == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

CUresult pc_drv_end_capture(CUstream s, CUgraph *g, int ptsz)
{
    int was = pc_drv_capturing(s, ptsz);
    CUresult r = ptsz ? PC_CALL_DRV(cuStreamEndCapture_ptsz, s, g) : PC_CALL_DRV(cuStreamEndCapture, s, g);

    if (was && !pc_drv_capturing(s, ptsz))
        pc_fence_capture_end();
    return r;
}
