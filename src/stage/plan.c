/* plan.c - which pageable copies are staged, whether their stream lets the
 * ring be used, and reading after the stream's earlier work (see plan.h). */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "stage/plan.h"
#include "core/fence.h"
#include "util/stats.h"

/* ==== The runtime's pageable-copy ordering, as measured on the H200
 * (pincache(7) PAGEABLE COPIES; tests/gpu/gpu_order.cu asserts it).  Every
 * choice staging makes about when it reads a source and what it may wait
 * for is made in these functions.
 *
 *   - cudaMemcpy H2D first waits for the legacy stream's earlier work, which
 *     includes every blocking and per-thread stream's, host functions
 *     included (the device gets a host function's bytes); not for
 *     non-blocking streams.
 *   - cudaMemcpy_ptds H2D first waits for the per-thread stream's own
 *     earlier work only: behind legacy work, 64 KiB returned at once.
 *   - cudaMemcpyAsync H2D reads the source at the call, through a 2 MiB
 *     staging buffer: 64 KiB returned at once; 16 MiB read its first 2 MiB
 *     at the call and held the host until the work ahead was done (101.8 ms
 *     behind a 100 ms kernel), reading the rest as the DMA drained.  Staging
 *     reads it all at the call (within what the runtime leaves undefined),
 *     and returns at once: 0.4 ms for that 16 MiB copy.
 *   - D2H into pageable memory returns when the data is there.
 * Which devices get no staging at all (they read pageable memory through
 * the host's page tables): native.c.
 * ==== */

/* Must the copy wait for earlier work before its source is read?  Sync
 * H2D only (legacy or per-thread semantics: pc_order_wait). */
int pc_rt_reads_after_stream(const struct pc_plan *p)
{
    return p->h2d && p->sync;
}

/* Does the runtime hold the calling thread for the work queued ahead of the
 * copy on its own stream, once it has read `read` bytes of the source?
 * Staging may block on a ring slot whose DMA went to that stream only then
 * (waiting for part of that same work); a slot busy on any other stream is
 * only asked about, and the rest of the copy left to the runtime meanwhile:
 * that DMA may be held by work waiting for this very thread.  D2H and
 * cudaMemcpy: yes (cudaMemcpy's stream work is done by then anyway).  An
 * async H2D, or a cudaMemcpy_ptds behind legacy work: only once the runtime's
 * staging buffer is full (16 MiB held after its first 2 MiB, 64 KiB did not
 * hold; a copy that fits 2 MiB is taken to be read at once, as the 64 KiB
 * one), so that the first 2 MiB are always read at the call, as there. */
int pc_rt_holds_for_stream(const struct pc_plan *p, size_t read)
{
    if (!p->h2d || (p->h == cudaStreamLegacy && p->sync))
        return 1;
    return p->n > PC_RT_STAGING_BYTES && read >= PC_RT_STAGING_BYTES;
}

/* Did the runtime's copy p hold the calling thread until the work queued
 * ahead of it on its stream was done?  An H2D larger than the runtime's
 * staging buffer did (async, cudaMemcpy_ptds: after its first 2 MiB;
 * cudaMemcpy: before it read).  Then a later copy on the same stream may
 * wait for p's staged DMAs even within its own first 2 MiB: they wait for
 * nothing but that work, which a plain program got past only once it was
 * done (a program whose plain copy p hangs hangs under pincache too, one
 * copy later).  Without it, PyTorch's non-blocking .cuda() of 2.5 MiB rows
 * found the previous row's chunks busy and left its rest to the runtime
 * (an H100: 1,189 of 2,560 copies, at 8.6 GB/s). */
int pc_rt_held_for_stream(const struct pc_plan *p)
{
    return p->h2d && p->n > PC_RT_STAGING_BYTES;
}

/* Does a staged sync H2D return only once its DMA is done?  The runtime
 * returns once the source is staged; its last DMA is then under way.
 * cudaMemcpy: its stream was idle (pc_order_wait), so waiting for the DMA
 * costs the DMA alone.  cudaMemcpy_ptds: only when nothing held the DMA
 * behind the legacy stream (pc_order_wait asked), so that a copy the
 * runtime returns from at once (64 KiB behind legacy work) never waits for
 * that work. */
int pc_rt_sync_h2d_waits_dma(const struct pc_plan *p)
{
    return p->h == cudaStreamLegacy || p->legacy_idle;
}

/* --- which copies are staged --- */

/* Is [p, p+n) mapped?  The copy threads read or write the program's memory
 * directly, where the runtime would have returned an error for a bad
 * pointer; a program that passes one must get that error, not a crash in
 * one of our threads.  mincore fails with ENOMEM on any unmapped page of the
 * range.  (It cannot see protections: a read-only destination still
 * faults, as it would inside the runtime's own pageable copy.) */
static int pc_host_mapped(const void *p, size_t n)
{
    static const size_t chunk_pages = 4096;     /* 16 MiB of 4 KiB pages per call */
    /* Only mincore's result is read, never the vector: one for every
     * thread, off the stack (the program's, which may be small). */
    static unsigned char vec[4096];
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(pg - 1), end = (uintptr_t)p + n;

    while (a < end) {
        size_t len = end - a;
        if (len > chunk_pages * pg)
            len = chunk_pages * pg;
        if (mincore((void *)a, len, vec) != 0 && errno == ENOMEM)
            return 0;
        a += len;
    }
    return 1;
}

/* Does [d, d+n) lie in one device allocation?  Two cudaMalloc'd
 * neighbours: the runtime rejects a copy across the seam (1, invalid
 * value); two VMM allocations mapped back to back: it copies across (H200).
 * Either way the copy is the runtime's, so staging takes only a range that
 * cuMemGetAddressRange puts in one allocation; without that call, none. */
typedef CUresult (*pc_addr_range_fn)(CUdeviceptr *, size_t *, CUdeviceptr);

static int pc_one_allocation(const char *d, size_t n)
{
    static void *entry;
    static int resolved;     /* entry is final once set (racing resolvers agree) */
    pc_addr_range_fn fn;
    CUdeviceptr base = 0;
    size_t size = 0;

    if (!__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) {
        void *f = pc_real_drv_entry((void *)PC_REAL(cuMemGetAddressRange_v2), "cuMemGetAddressRange", 3020);
        pc_clear_own_error();
        __atomic_store_n(&entry, f, __ATOMIC_RELAXED);
        __atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
    }
    fn = (pc_addr_range_fn)__atomic_load_n(&entry, __ATOMIC_RELAXED);
    if (!fn || fn(&base, &size, (CUdeviceptr)(uintptr_t)d) != CUDA_SUCCESS)
        return 0;
    return (uintptr_t)d >= base && (uintptr_t)d - base <= size && n <= size - ((uintptr_t)d - base);
}

/* Fill p's direction and sides (plan.h).  The host side was classified by
 * the copy policy; the device side is asked here, only for a pageable copy
 * whose host range is mapped. */
int pc_plan_classify(struct pc_plan *p, struct pc_copy *c)
{
    struct pc_mem_side *dev;

    if (c->kind == cudaMemcpyHostToDevice) {
        if (pc_mem_of(&c->s) != PC_MEM_PAGEABLE)
            return PC_SKIP;
        p->h2d = 1;
    } else if (c->kind == cudaMemcpyDeviceToHost) {
        if (pc_mem_of(&c->d) != PC_MEM_PAGEABLE)
            return PC_SKIP;
        p->h2d = 0;
    } else {                 /* cudaMemcpyDefault: the pointers say */
        enum pc_mem st = pc_mem_of(&c->s), dt = pc_mem_of(&c->d);
        if (st == PC_MEM_PAGEABLE && dt == PC_MEM_DEVICE)
            p->h2d = 1;
        else if (st == PC_MEM_DEVICE && dt == PC_MEM_PAGEABLE)
            p->h2d = 0;
        else
            return PC_SKIP;
    }
    p->n = c->n;
    p->host = p->h2d ? (char *)c->src : (char *)c->dst;
    p->dev = p->h2d ? (char *)c->dst : (char *)c->src;
    dev = p->h2d ? &c->d : &c->s;
    if (!pc_host_mapped(p->host, p->n))
        return PC_DRIVER;
    /* One device allocation: a copy that runs past it is the runtime's to
     * reject (or to do), before any byte moves. */
    if (pc_mem_of(dev) != PC_MEM_DEVICE || !pc_one_allocation(p->dev, p->n))
        return PC_DRIVER;
    p->devno = dev->device;
    return PC_STAGE;
}

/* Events and the ring belong to one device. */
int pc_plan_stream_ok(struct pc_plan *p, cudaStream_t stream, enum pc_copy_how how)
{
    enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    int cur = -1, sdev = -1;

    switch (how) {
    case PC_COPY_SYNC:       p->h = cudaStreamLegacy; p->sync = 1; break;
    case PC_COPY_SYNC_PTDS:  p->h = cudaStreamPerThread; p->sync = 1; break;
    case PC_COPY_ASYNC:      p->h = stream ? stream : cudaStreamLegacy; break;
    case PC_COPY_ASYNC_PTSZ: p->h = stream ? stream : cudaStreamPerThread; break;
    }
    /* Any capture in the process: the legacy stream and our event calls may
     * be illegal there, and graphs cannot hold a host-side staging step. */
    if (pc_fence_capturing() > 0)
        return 0;
    if (PC_CALL_REAL(cudaStreamIsCapturing, p->h, &cs) != cudaSuccess) {
        pc_clear_own_error();
        return 0;
    }
    if (cs != cudaStreamCaptureStatusNone)
        return 0;
    if (PC_CALL_REAL(cudaGetDevice, &cur) != cudaSuccess) {
        pc_clear_own_error();
        return 0;
    }
    if (p->h == cudaStreamLegacy || p->h == cudaStreamPerThread) {
        sdev = cur;
    } else if (!PC_REAL(cudaStreamGetDevice)) {
        return 0;            /* runtime older than 12.8: cannot tell */
    } else if (PC_CALL_REAL(cudaStreamGetDevice, p->h, &sdev) != cudaSuccess) {
        pc_clear_own_error();
        return 0;            /* bad handle: the runtime gives the error */
    }
    return cur >= 0 && cur < PC_STAGE_MAX_DEV && sdev == cur && p->devno == cur;
}

/* --- reading after the stream's earlier work (pc_rt_reads_after_stream) ---
 *
 * cudaMemcpy: an event recorded on the legacy stream completes after every
 * blocking and per-thread stream's earlier work, not non-blocking ones'
 * (measured), as the copy itself waits.  cudaMemcpy_ptds: the per-thread
 * stream's own queue.  The wait happens before the rings' lock is taken:
 * no other thread's copy ever waits behind the program's GPU work.  Events
 * are pooled per device; O.lock guards the lists only and is never held
 * across a CUDA call. */
struct pc_oev {
    cudaEvent_t ev;
    unsigned gen;            /* O.gen[dev] when made: a device reset kills it */
    int dev;
    struct pc_oev *next;
};

static struct {
    pthread_mutex_t lock;
    struct pc_oev *idle[PC_STAGE_MAX_DEV];
    unsigned gen[PC_STAGE_MAX_DEV];
} O = { PTHREAD_MUTEX_INITIALIZER, { NULL }, { 0 } };

/* An idle event of dev (the current device), or a new one; NULL: none. */
static struct pc_oev *pc_oev_get(int dev)
{
    struct pc_oev *e;
    unsigned gen;

    pthread_mutex_lock(&O.lock);
    e = O.idle[dev];
    if (e)
        O.idle[dev] = e->next;
    gen = O.gen[dev];
    pthread_mutex_unlock(&O.lock);
    if (e)
        return e;
    e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    if (PC_CALL_REAL(cudaEventCreateWithFlags, &e->ev, cudaEventDisableTiming) != cudaSuccess) {
        pc_clear_own_error();
        free(e);
        return NULL;
    }
    e->gen = gen;
    e->dev = dev;
    return e;
}

/* Back to the pool; an event older than a device reset is dropped without a
 * CUDA call (it died with its context). */
static void pc_oev_put(struct pc_oev *e)
{
    pthread_mutex_lock(&O.lock);
    if (e->gen == O.gen[e->dev]) {
        e->next = O.idle[e->dev];
        O.idle[e->dev] = e;
        e = NULL;
    }
    pthread_mutex_unlock(&O.lock);
    free(e);
}

/* Forget dev's events, without CUDA calls (O.lock held or a fork child); dev < 0: every device's. */
static void pc_oev_forget_locked(int dev)
{
    for (int d = 0; d < PC_STAGE_MAX_DEV; d++) {
        if (dev >= 0 && d != dev)
            continue;
        while (O.idle[d]) {
            struct pc_oev *e = O.idle[d];
            O.idle[d] = e->next;
            free(e);
        }
        O.gen[d]++;
    }
}

/* Wait until the work the runtime reads p's source after is done: for
 * cudaMemcpy an event on the legacy stream, for cudaMemcpy_ptds the
 * per-thread stream's own queue (not the legacy work it is ordered after).
 * 0: done; -1: it failed (the runtime takes the copy; the program had no
 * error pending, so any error left here is ours). */
int pc_order_wait(struct pc_plan *p)
{
    uint64_t t0 = pc_now_ns();
    struct pc_oev *e = NULL;
    cudaError_t err;

    if (p->h == cudaStreamPerThread) {
        err = PC_CALL_REAL(cudaStreamSynchronize, cudaStreamPerThread);
        if (err == cudaSuccess) {
            /* Counts every blocking stream's work too (measured). */
            p->legacy_idle = PC_CALL_REAL(cudaStreamQuery, cudaStreamLegacy) == cudaSuccess;
            if (!p->legacy_idle)
                pc_clear_own_error();
        }
    } else {
        e = pc_oev_get(p->devno);
        if (!e)
            return -1;
        err = PC_CALL_REAL(cudaEventRecord, e->ev, p->h);
        if (err == cudaSuccess)
            err = PC_CALL_REAL(cudaEventSynchronize, e->ev);
    }
    PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
    if (err != cudaSuccess) {
        pc_clear_own_error();
        free(e);             /* its state is unknown: never used again */
        return -1;
    }
    if (e)
        pc_oev_put(e);
    return 0;
}

void pc_order_forget(int dev)
{
    /* A blocking lock: a copy staging on this device now is racing the
     * program's own reset; let it finish first. */
    pthread_mutex_lock(&O.lock);
    pc_oev_forget_locked(dev);
    pthread_mutex_unlock(&O.lock);
}

void pc_order_after_fork_child(void)
{
    pthread_mutex_init(&O.lock, NULL);
    pc_oev_forget_locked(-1);
}
