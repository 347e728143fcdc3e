/* stage.c - pageable cudaMemcpy/cudaMemcpyAsync staged through a pinned ring.
 *
 * The runtime copies pageable memory at 6.5-15 GB/s and pinned memory at 55
 * (measured, H200).  A staged copy is cut into pieces; the copy threads
 * (stage_threads.c) move each piece between the pageable buffer and a pinned
 * ring slot while the DMA of the previous piece runs.  Every slot has an
 * event recorded after its DMA, and is written (H2D) or read (D2H) again only
 * once that event has completed.
 *
 * Semantics kept (CUDA "API synchronization behavior", and the H200's
 * pageable-copy ordering: see "The runtime's pageable-copy ordering" below):
 *  - async H2D returns once the whole source is in the ring, so the caller may
 *    overwrite it; the DMAs run in the stream's order;
 *  - cudaMemcpy runs on the legacy default stream (cudaMemcpy_ptds on the
 *    per-thread one), reads its source after the work the runtime waits for
 *    first, and returns once the source is staged (the DMA done too, unless
 *    other work holds it);
 *  - D2H, sync or async, returns when the data is in the destination;
 *  - the copy returns the first failing DMA's error; an internal failure
 *    (event, ring) hands the rest of the copy to the runtime.
 * Anything we are unsure of (capture, other devices, unknown memory, an error
 * already pending) goes to the runtime untouched. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "api/api.h"
#include "util/state.h"
#include "core/fence.h"
#include "util/log.h"
#include "util/options.h"
#include "real/real.h"
#include "stage/stage.h"
#include "stage/stage_threads.h"
#include "util/stats.h"
#include "core/cache.h"


#define PC_STAGE_MAX_DEV 64
#define PC_STAGE_MIN_PIECE (256u << 10)
#define PC_STAGE_RETRY_NS 1000000000ull   /* after a failed ring allocation */

struct pc_slot {
    char *buf;               /* chunk bytes of pinned memory */
    cudaEvent_t ev;          /* recorded after the last DMA that used buf */
    int pending;             /* ev recorded and not yet seen complete */
    cudaStream_t on;         /* the stream of that DMA (resolved: never 0) */
    pthread_t by;            /* the thread that queued it (per-thread streams) */
};

struct pc_ring {             /* one per device: events belong to a device */
    int broken;              /* a slot's state is unknown: never used again */
    unsigned nslot, nalloc;  /* slots wanted, slots allocated (lazily) */
    unsigned head;           /* first slot of the next copy: least recently used */
    size_t chunk;
    uint64_t retry_ns;       /* no allocation attempt before this time */
    struct pc_slot *slot;
    char **bufs;             /* slot[i].buf, for the copy threads */
    unsigned *left;          /* per-slot slice counters of the copy threads */
    struct pc_ring *abandoned_next;
};

/* S.lock guards the rings.  It is only ever try-locked: a thread that finds
 * another staging passes its copy to the runtime instead of waiting, so
 * staging never makes one thread wait for another thread's stream (which
 * could deadlock a program whose GPU work waits for host progress). */
static struct {
    pthread_mutex_t lock;
    struct pc_ring *ring[PC_STAGE_MAX_DEV];
    struct pc_ring *abandoned;   /* dropped rings: never used or freed again */
    unsigned threads;            /* copy-thread participants; 0: not decided yet */
} S = { PTHREAD_MUTEX_INITIALIZER, { NULL }, NULL, 0 };

/* Drop a ring (device reset, fork): its memory may belong to nobody now, so
 * it is never touched again; kept on a list so it stays reachable. */
static void pc_ring_abandon(int dev)
{
    struct pc_ring *r = S.ring[dev];
    if (!r)
        return;
    r->abandoned_next = S.abandoned;
    S.abandoned = r;
    S.ring[dev] = NULL;
}

struct pc_plan {
    int h2d;                 /* direction */
    int sync;                /* cudaMemcpy/_ptds: complete before returning */
    char *host;              /* pageable side */
    char *dev;               /* device side */
    size_t n;
    int devno;               /* device of dev */
    cudaStream_t h;          /* explicit stream: 0 resolved to legacy or per-thread */
    int legacy_idle;         /* cudaMemcpy_ptds: the legacy stream had no work when it was read */
};

/* The program had no error pending when we started (checked), so any error
 * our own queries leave behind is ours to clear: its last-error state must
 * not change. */
static void pc_clear_own_error(void)
{
    PC_CALL_REAL(cudaGetLastError);
}

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
 * ==== */
#define PC_RT_STAGING_BYTES ((size_t)2 << 20)

/* Must the copy wait for earlier work before its source is read?  Sync
 * H2D only (legacy or per-thread semantics: pc_order_wait). */
static int pc_rt_reads_after_stream(const struct pc_plan *p)
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
static int pc_rt_holds_for_stream(const struct pc_plan *p, size_t read)
{
    if (!p->h2d || (p->h == cudaStreamLegacy && p->sync))
        return 1;
    return p->n > PC_RT_STAGING_BYTES && read >= PC_RT_STAGING_BYTES;
}

/* Does a staged sync H2D return only once its DMA is done?  The runtime
 * returns once the source is staged; its last DMA is then under way.
 * cudaMemcpy: its stream was idle (pc_order_wait), so waiting for the DMA
 * costs the DMA alone.  cudaMemcpy_ptds: only when nothing held the DMA
 * behind the legacy stream (pc_order_wait asked), so that a copy the
 * runtime returns from at once (64 KiB behind legacy work) never waits for
 * that work. */
static int pc_rt_sync_h2d_waits_dma(const struct pc_plan *p)
{
    return p->h == cudaStreamLegacy || p->legacy_idle;
}

enum { PC_SKIP, PC_DRIVER, PC_STAGE };
enum { PC_MEM_PAGEABLE, PC_MEM_DEVICE, PC_MEM_OTHER };

/* --- which copies are staged --- */

/* An error from the query means memory the runtime does not know: pageable
 * (older runtimes answer so instead of cudaMemoryTypeUnregistered).  Never
 * cached: the program can free and remap pageable memory at any time. */
static int pc_mem_type(const void *p, int *dev)
{
    struct cudaPointerAttributes a;

    memset(&a, 0, sizeof a);
    if (PC_CALL_REAL(cudaPointerGetAttributes, &a, p) != cudaSuccess) {
        pc_clear_own_error();
        return PC_MEM_PAGEABLE;
    }
    if (a.type == cudaMemoryTypeUnregistered)
        return PC_MEM_PAGEABLE;
    if (a.type == cudaMemoryTypeDevice) {
        *dev = a.device;
        return PC_MEM_DEVICE;
    }
    return PC_MEM_OTHER;     /* pinned, registered, managed */
}

static int pc_pageable(const void *p)
{
    int dev;
    /* The cache's own blocks are pinned: a lookup is cheaper than a query. */
    return !pc_cache_owns(p) && pc_mem_type(p, &dev) == PC_MEM_PAGEABLE;
}

/* Is [p, p+n) mapped?  The copy threads read or write the program's memory
 * directly, where the runtime would have returned an error for a bad
 * pointer; a program that passes one must get that error, not a crash in
 * one of our threads.  mincore fails with ENOMEM on any unmapped page of the
 * range.  (It cannot see protections: a read-only destination still
 * faults, as it would inside the runtime's own pageable copy.) */
static int pc_host_mapped(const void *p, size_t n)
{
    static const size_t chunk_pages = 4096;     /* 16 MiB of 4 KiB pages per call */
    unsigned char vec[4096];
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

/* Fill p's direction and sides.  PC_SKIP: not a pageable host/device copy;
 * PC_DRIVER: pageable, but the device side is not plainly one device
 * allocation covering the whole range (let the runtime judge it). */
static int pc_classify(struct pc_plan *p, void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
    int sdev = -1, ddev = -1, dev = -1;
    char *d;

    if (kind == cudaMemcpyHostToDevice) {
        if (!pc_pageable(src))
            return PC_SKIP;
        p->h2d = 1;
    } else if (kind == cudaMemcpyDeviceToHost) {
        if (!pc_pageable(dst))
            return PC_SKIP;
        p->h2d = 0;
    } else {                 /* cudaMemcpyDefault: the pointers say */
        int st = pc_cache_owns(src) ? PC_MEM_OTHER : pc_mem_type(src, &sdev);
        int dt = pc_cache_owns(dst) ? PC_MEM_OTHER : pc_mem_type(dst, &ddev);
        if (st == PC_MEM_PAGEABLE && dt == PC_MEM_DEVICE)
            p->h2d = 1;
        else if (st == PC_MEM_DEVICE && dt == PC_MEM_PAGEABLE)
            p->h2d = 0;
        else
            return PC_SKIP;
    }
    p->n = n;
    p->host = p->h2d ? (char *)src : (char *)dst;
    p->dev = p->h2d ? (char *)dst : (char *)src;
    if (!pc_host_mapped(p->host, n))
        return PC_DRIVER;
    d = p->dev;
    /* One device allocation: a copy that runs past it is the runtime's to
     * reject (or to do), before any byte moves. */
    if (pc_mem_type(d, &dev) != PC_MEM_DEVICE || !pc_one_allocation(d, n))
        return PC_DRIVER;
    p->devno = dev;
    return PC_STAGE;
}

/* Resolve the stream and check that the ring may use it: no capture, and
 * stream, current device and device memory all on one device (events and
 * the ring belong to one device). */
static int pc_stream_ok(struct pc_plan *p, cudaStream_t stream, enum pc_copy_how how)
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
 * stream's own queue.  The wait happens before S.lock is taken: no other
 * thread's copy ever waits behind the program's GPU work.  Events are
 * pooled per device; O.lock guards the lists only and is never held across
 * a CUDA call. */
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
static int pc_order_wait(struct pc_plan *p)
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

/* --- the ring (S.lock held) --- */

static struct pc_ring *pc_ring_get(int dev)
{
    struct pc_ring *r = S.ring[dev];
    /* Whole pages, 2 to 1024 of them to the ring (options.c settles it):
     * one filling while the other's DMA runs. */
    size_t chunk = pc_opt.stage_chunk, nslot = pc_opt.stage_ring / chunk;

    if (r)
        return r;
    r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->slot = calloc(nslot, sizeof *r->slot);
    r->bufs = calloc(nslot, sizeof *r->bufs);
    r->left = calloc(nslot, sizeof *r->left);
    if (!r->slot || !r->bufs || !r->left) {
        free(r->slot);
        free(r->bufs);
        free(r->left);
        free(r);
        return NULL;
    }
    r->nslot = (unsigned)nslot;
    r->chunk = chunk;
    S.ring[dev] = r;
    return r;
}

/* Allocate slots up to want (the current device is the ring's).  The ring
 * grows only as large copies need it, and a failure (pinned memory short)
 * is retried at most once a second.  Returns the slots available. */
static unsigned pc_ring_grow(struct pc_ring *r, unsigned want)
{
    static int warned;

    if (want > r->nslot)
        want = r->nslot;
    if (r->nalloc >= want || (r->retry_ns && pc_now_ns() < r->retry_ns))
        return r->nalloc;
    while (r->nalloc < want) {
        struct pc_slot *s = &r->slot[r->nalloc];
        cudaError_t err;
        void *buf = NULL;
        cudaEvent_t ev;

        err = PC_CALL_REAL(cudaEventCreateWithFlags, &ev, cudaEventDisableTiming);
        if (err == cudaSuccess) {
            /* The real call: the ring is ours, never the program's cache. */
            err = PC_CALL_REAL(cudaHostAlloc, &buf, r->chunk, cudaHostAllocPortable);
            if (err != cudaSuccess)
                PC_CALL_REAL(cudaEventDestroy, ev);
        }
        if (err != cudaSuccess) {
            pc_clear_own_error();
            PC_STAT_INC(stage_ring_fail);
            r->retry_ns = pc_now_ns() + PC_STAGE_RETRY_NS;
            pc_log_once(&warned, PC_LOG_WARN,
                        "staging ring: pinned allocation failed (CUDA error %d); %u of %u chunks",
                        (int)err, r->nalloc, r->nslot);
            break;
        }
        s->buf = buf;
        s->ev = ev;
        s->pending = 0;
        r->bufs[r->nalloc++] = buf;
        PC_GAUGE_ADD(stage_ring_bytes, r->chunk);
    }
    return r->nalloc;
}

/* cudaDeviceReset takes the ring's pinned memory and events with the
 * context.  pc_stage_device_reset forgets the ring before a reset made
 * through us; this catches the others (a driver-level reset): a ring whose
 * first chunk is no longer pinned memory is dropped (never touched again,
 * not freed) and built anew. */
static struct pc_ring *pc_ring_check(struct pc_ring *r, int dev)
{
    struct cudaPointerAttributes a;

    if (r->nalloc == 0)
        return r;
    memset(&a, 0, sizeof a);
    if (PC_CALL_REAL(cudaPointerGetAttributes, &a, r->slot[0].buf) == cudaSuccess &&
        a.type == cudaMemoryTypeHost)
        return r;
    pc_clear_own_error();
    pc_info("staging ring of device %d lost (device reset?); making a new one", dev);
    PC_GAUGE_ADD(stage_ring_bytes, -(int64_t)(r->nalloc * r->chunk));
    pc_ring_abandon(dev);
    return pc_ring_get(dev);
}

static void pc_ring_break(struct pc_ring *r, const char *what, cudaError_t err)
{
    static int warned;
    r->broken = 1;
    pc_log_once(&warned, PC_LOG_WARN, "staging disabled on this device: %s failed (CUDA error %d)",
                what, (int)err);
}

/* Was slot s's pending DMA queued on p's stream (the same per-thread
 * stream: by this thread)? */
static int pc_slot_ours(const struct pc_plan *p, const struct pc_slot *s)
{
    return s->on == p->h && (p->h != cudaStreamPerThread || pthread_equal(s->by, pthread_self()));
}

/* 1: slot s is free (its last DMA is done), 0: not yet, -1: *err says why
 * not, PC_SLOT_ELSEWHERE: busy, and the copy may not wait for it (the rest
 * of the copy goes to the runtime).  block: wait for it (the caller has
 * nothing else to do), where the runtime would wait too
 * (pc_rt_holds_for_stream; read: bytes of the source read so far): a DMA
 * queued on another stream may be held by work that waits for this very
 * thread. */
#define PC_SLOT_ELSEWHERE (-2)
static int pc_slot_free(const struct pc_plan *p, struct pc_slot *s, size_t read, int block,
                        cudaError_t *err)
{
    int may_wait = pc_slot_ours(p, s) && pc_rt_holds_for_stream(p, read);
    cudaError_t e;

    if (!s->pending)
        return 1;
    if (pc_opt.test_stage_unsafe) {
        s->pending = 0;      /* TEST ONLY: reuse without waiting for the DMA */
        return 1;
    }
    if (block && may_wait) {
        uint64_t t0 = pc_now_ns();
        e = PC_CALL_REAL(cudaEventSynchronize, s->ev);
        PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
    } else {
        e = PC_CALL_REAL(cudaEventQuery, s->ev);
    }
    if (e == cudaErrorNotReady) {
        /* Not an error, and the runtime does not record it; be sure. */
        if (PC_CALL_REAL(cudaPeekAtLastError) == cudaErrorNotReady)
            pc_clear_own_error();
        return block ? PC_SLOT_ELSEWHERE : 0;
    }
    if (e != cudaSuccess) {
        *err = e;
        return -1;
    }
    s->pending = 0;
    return 1;
}

/* --- the two pipelines.  Each returns the copy's result; *redo is where the
 * runtime must take over (n: nowhere), after an internal failure or, with
 * *elsewhere set, at a slot still busy with a DMA the copy may not wait for;
 * *used is how many slots the copy went through. --- */

static cudaError_t pc_run_h2d(struct pc_ring *r, const struct pc_plan *p, struct pc_xfer *x,
                              size_t *redo, int *elsewhere, uint64_t *used)
{
    uint64_t np = x->npieces, ready = 0, dma = 0;
    cudaError_t err = cudaSuccess;
    unsigned spins = 0;
    int rc;

    pc_xfer_begin(x);
    while (dma < np) {
        /* A filled piece goes to the DMA engine, in order. */
        if (dma < ready && pc_xfer_piece_done(x, dma)) {
            struct pc_slot *s = &r->slot[pc_xfer_slot(x, dma)];
            size_t off = pc_xfer_piece_off(x, dma);

            err = PC_CALL_REAL(cudaMemcpyAsync, p->dev + off, s->buf, pc_xfer_piece_len(x, dma),
                               cudaMemcpyHostToDevice, p->h);
            if (err != cudaSuccess)
                break;       /* the runtime's answer for this copy */
            err = PC_CALL_REAL(cudaEventRecord, s->ev, p->h);
            if (err != cudaSuccess) {
                /* Queued, but we cannot tell when it is done: the runtime
                 * redoes this piece and the rest, after it in stream order. */
                pc_clear_own_error();
                pc_ring_break(r, "cudaEventRecord", err);
                err = cudaSuccess;
                *redo = off;
                break;
            }
            s->pending = 1;
            s->on = p->h;
            s->by = pthread_self();
            dma++;
            spins = 0;
            continue;
        }
        /* The next piece may be filled once its slot's previous DMA is done. */
        if (ready < np && ready < dma + x->nslot) {
            rc = pc_slot_free(p, &r->slot[pc_xfer_slot(x, ready)], pc_xfer_piece_off(x, ready),
                              dma == ready, &err);
            if (rc == PC_SLOT_ELSEWHERE) {
                *elsewhere = 1;      /* every filled piece is queued (dma == ready) */
                *redo = pc_xfer_piece_off(x, dma);
                break;
            }
            if (rc < 0) {
                /* Ours, not the copy's (events lost to a device reset, or
                 * a sticky error the runtime will report itself). */
                pc_clear_own_error();
                pc_ring_break(r, "a staging event", err);
                err = cudaSuccess;
                *redo = pc_xfer_piece_off(x, dma);
                break;
            }
            if (rc > 0) {
                pc_xfer_ready(x, ++ready);
                spins = 0;
                continue;
            }
        }
        if (pc_xfer_help(x)) {
            spins = 0;
            continue;
        }
        pc_xfer_relax(&spins);
    }
    pc_xfer_end(x);
    *used = ready;
    /* The last DMA covers the others (one stream). */
    if (err == cudaSuccess && *redo == p->n && p->sync && dma > 0 && pc_rt_sync_h2d_waits_dma(p)) {
        struct pc_slot *s = &r->slot[pc_xfer_slot(x, dma - 1)];
        uint64_t t0 = pc_now_ns();
        err = PC_CALL_REAL(cudaEventSynchronize, s->ev);
        PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
        if (err == cudaSuccess)
            s->pending = 0;
    }
    return err;
}

static cudaError_t pc_run_d2h(struct pc_ring *r, const struct pc_plan *p, struct pc_xfer *x,
                              size_t *redo, int *elsewhere, uint64_t *used)
{
    uint64_t np = x->npieces, issued = 0, ready = 0, retired = 0;
    cudaError_t err = cudaSuccess;
    unsigned spins = 0;
    int rc;

    pc_xfer_begin(x);
    while (retired < np) {
        /* Pieces copied out free their slots. */
        if (retired < ready && pc_xfer_piece_done(x, retired)) {
            retired++;
            spins = 0;
            continue;
        }
        /* DMA into every free slot, up to a ring ahead of the copy-out. */
        if (issued < np && issued < retired + x->nslot) {
            struct pc_slot *s = &r->slot[pc_xfer_slot(x, issued)];
            rc = pc_slot_free(p, s, p->n, retired == ready && ready == issued, &err);
            if (rc == PC_SLOT_ELSEWHERE) {
                *elsewhere = 1;      /* every piece issued is copied out */
                *redo = pc_xfer_piece_off(x, retired);
                break;
            }
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                size_t off = pc_xfer_piece_off(x, issued);
                err = PC_CALL_REAL(cudaMemcpyAsync, s->buf, p->dev + off,
                                   pc_xfer_piece_len(x, issued), cudaMemcpyDeviceToHost, p->h);
                if (err != cudaSuccess)
                    break;   /* the runtime's answer for this copy */
                err = PC_CALL_REAL(cudaEventRecord, s->ev, p->h);
                if (err != cudaSuccess)
                    goto internal;
                s->pending = 1;
                s->on = p->h;
                s->by = pthread_self();
                issued++;
                spins = 0;
                continue;
            }
        }
        /* A piece whose DMA has landed may be copied out. */
        if (ready < issued) {
            rc = pc_slot_free(p, &r->slot[pc_xfer_slot(x, ready)], p->n, retired == ready, &err);
            if (rc < 0)
                goto internal;
            if (rc > 0) {
                pc_xfer_ready(x, ++ready);
                spins = 0;
                continue;
            }
        }
        if (pc_xfer_help(x)) {
            spins = 0;
            continue;
        }
        pc_xfer_relax(&spins);
    }
    pc_xfer_end(x);
    *used = issued;
    return err;

internal:
    /* An event failed: no slot in flight can be trusted.  The runtime
     * copies everything not yet copied out (again, for pieces in flight). */
    pc_xfer_end(x);
    pc_clear_own_error();
    pc_ring_break(r, "a staging event", err);
    *redo = pc_xfer_piece_off(x, retired);
    *used = issued;
    return cudaSuccess;
}

/* Pieces of at least 256K, about PINCACHE_STAGE_PIECES to a copy so that
 * filling overlaps the DMA from early on, at most a chunk.  Measured on the
 * H200 with PyTorch's 2.5 MiB pageable .cuda() (docs/pytorch.md): 4 pieces
 * 70 ms for 512 copies, 16 pieces 79, 8 pieces 94 to 135. */
static size_t pc_piece_size(size_t n, size_t chunk)
{
    size_t piece = ((n / (size_t)pc_opt.stage_pieces) + 65535) & ~(size_t)65535;

    if (piece < PC_STAGE_MIN_PIECE)
        piece = PC_STAGE_MIN_PIECE;
    return piece < chunk ? piece : chunk;
}

/* PINCACHE_STAGE_THREADS, or by default the node's CPUs shared among the
 * processes on it (each has its own copy threads): two torchrun ranks with
 * 16 threads each on 16 CPUs staged at 2.8-4.9 GB/s on the H200. */
static long pc_stage_threads_wanted(long *procs)
{
    long n;

    *procs = pc_env_local_procs();
    if (pc_opt.stage_threads > 0)
        return pc_opt.stage_threads;
    if (*procs <= 1)
        return 0;                    /* pc_xfer_threads' own default */
    n = (long)pc_xfer_cpus() / *procs;
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

/* Stage p (S.lock held).  0: no ring to be had, or (*elsewhere set) its
 * first slot is busy with a DMA the copy may not wait for: the caller passes
 * through.  1: *result is the copy's result so far; the runtime must copy
 * from *redo on (p->n: nothing), after S.lock is released. */
static int pc_stage_locked(struct pc_plan *p, cudaError_t *result, size_t *redo, int *elsewhere)
{
    struct pc_ring *r = pc_ring_get(p->devno);
    struct pc_xfer x;
    uint64_t used = 0;
    size_t piece;
    uint64_t npieces;
    unsigned nslot, threads;

    if (r)
        r = pc_ring_check(r, p->devno);
    if (!r || r->broken)
        return 0;
    piece = pc_piece_size(p->n, r->chunk);
    npieces = pc_xfer_count(p->n, piece);
    nslot = pc_ring_grow(r, npieces < r->nslot ? (unsigned)npieces : r->nslot);
    if (nslot == 0)
        return 0;
    if (!S.threads) {                /* fixed by the first copy (S.lock held) */
        long procs;
        S.threads = pc_xfer_threads(pc_stage_threads_wanted(&procs), pc_opt.stage_linger);
        pc_log(PC_LOG_INFO, "staging with %u copy threads (%u CPUs, %ld process%s on this node)",
               S.threads, pc_xfer_cpus(), procs, procs == 1 ? "" : "es");
    }
    threads = S.threads;
    pc_xfer_init(&x, p->h2d, p->host, p->n, piece, r->bufs, r->left, nslot, r->head, threads);
    x.stream_stores = pc_opt.stage_nt && p->n <= pc_opt.stage_nt_max;
    *redo = p->n;
    *result = p->h2d ? pc_run_h2d(r, p, &x, redo, elsewhere, &used)
                     : pc_run_d2h(r, p, &x, redo, elsewhere, &used);
    r->head = (unsigned)((r->head + used) % nslot);
    return !(*elsewhere && *redo == 0);  /* nothing moved: the runtime does it all */
}

/* The end of a staged copy, S.lock released: the runtime copies the rest
 * from redo on, if any (a sync cudaMemcpy_ptds H2D as the async copy the
 * runtime makes of it once its stream's own work is done, so that the
 * runtime reads its first 2 MiB at once, not after the pieces staged on
 * that stream: pc_rt_holds_for_stream). */
static cudaError_t pc_stage_finish(const struct pc_plan *p, void *dst, const void *src,
                                   enum cudaMemcpyKind kind, cudaStream_t stream,
                                   enum pc_copy_how how, cudaError_t err, size_t redo, int elsewhere,
                                   uint64_t t0)
{
    if (redo < p->n) {
        if (elsewhere)
            PC_STAT_INC(stage_busy);
        else
            PC_STAT_INC(stage_fallbacks);
        if (how == PC_COPY_SYNC_PTDS && p->h2d) {
            how = PC_COPY_ASYNC_PTSZ;
            stream = cudaStreamPerThread;
        }
        err = pc_copy_real((char *)dst + redo, (const char *)src + redo, p->n - redo, kind, stream,
                           how);
    }
    if (p->h2d) {
        PC_STAT_INC(stage_h2d_calls);
        PC_STAT_ADD(stage_h2d_bytes, p->n);
        PC_STAT_ADD(stage_h2d_ns, pc_now_ns() - t0);
    } else {
        PC_STAT_INC(stage_d2h_calls);
        PC_STAT_ADD(stage_d2h_bytes, p->n);
        PC_STAT_ADD(stage_d2h_ns, pc_now_ns() - t0);
    }
    return err;
}

/* A pageable copy left to the runtime: timed, for the report's estimate. */
static cudaError_t pc_driver_copy(const struct pc_plan *p, void *dst, const void *src, size_t n,
                                  enum cudaMemcpyKind kind, cudaStream_t stream,
                                  enum pc_copy_how how)
{
    uint64_t t0 = pc_now_ns();
    cudaError_t err = pc_copy_real(dst, src, n, kind, stream, how);
    uint64_t dt = pc_now_ns() - t0;

    if (p->h2d) {
        PC_STAT_INC(stage_h2d_driver_calls);
        PC_STAT_ADD(stage_h2d_driver_bytes, n);
        PC_STAT_ADD(stage_h2d_driver_ns, dt);
    } else {
        PC_STAT_INC(stage_d2h_driver_calls);
        PC_STAT_ADD(stage_d2h_driver_bytes, n);
        PC_STAT_ADD(stage_d2h_driver_ns, dt);
    }
    return err;
}

int pc_stage_copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                  cudaStream_t stream, enum pc_copy_how how, cudaError_t *result)
{
    struct pc_plan p;
    int c;

    if (!pc_opt.stage || pc_state.mode == PC_MODE_OFF || pc_state.forked_child)
        return 0;
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDefault)
        return 0;
    if (n < pc_opt.stage_min || n == 0) {
        PC_STAT_INC(stage_small_calls);
        PC_STAT_ADD(stage_small_bytes, n);
        return 0;
    }
    /* NULL: the runtime's error.  A pending error: our queries could replace
     * it, and the program must find it unchanged. */
    if (!dst || !src || PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess)
        return 0;
    memset(&p, 0, sizeof p);
    c = pc_classify(&p, dst, src, n, kind);
    if (c == PC_SKIP)
        return 0;
    if (c == PC_STAGE && pc_state.mode == PC_MODE_CACHE && pc_stream_ok(&p, stream, how) &&
        (!pc_rt_reads_after_stream(&p) || pc_order_wait(&p) == 0)) {
        uint64_t t0 = pc_now_ns();

        if (pthread_mutex_trylock(&S.lock) == 0) {
            int elsewhere = 0, done;
            size_t redo = p.n;
            cudaError_t err = cudaSuccess;

            done = pc_stage_locked(&p, &err, &redo, &elsewhere);
            pthread_mutex_unlock(&S.lock);
            if (done) {
                *result = pc_stage_finish(&p, dst, src, kind, stream, how, err, redo, elsewhere, t0);
                return 1;
            }
            if (elsewhere)
                PC_STAT_INC(stage_busy);
        } else {
            PC_STAT_INC(stage_busy);
        }
    }
    *result = pc_driver_copy(&p, dst, src, n, kind, stream, how);
    return 1;
}

void pc_stage_device_reset(void)
{
    cudaError_t pending;
    int dev = -1;

    if (pc_state.forked_child)
        return;
    pending = PC_CALL_REAL(cudaPeekAtLastError);
    if (PC_CALL_REAL(cudaGetDevice, &dev) != cudaSuccess) {
        if (pending == cudaSuccess)
            pc_clear_own_error();
        return;
    }
    pc_stage_forget_device(dev);
}

void pc_stage_forget_device(int dev)
{
    struct pc_ring *r;

    if (pc_state.forked_child || dev < 0 || dev >= PC_STAGE_MAX_DEV)
        return;
    /* A blocking lock: a copy staging on this device now is racing the
     * program's own reset; let it finish first. */
    pthread_mutex_lock(&O.lock);
    pc_oev_forget_locked(dev);
    pthread_mutex_unlock(&O.lock);
    pthread_mutex_lock(&S.lock);
    r = S.ring[dev];
    if (r) {
        /* Never touched again: after the reset its addresses may be handed
         * out to new pinned allocations. */
        PC_GAUGE_ADD(stage_ring_bytes, -(int64_t)(r->nalloc * r->chunk));
        pc_ring_abandon(dev);
    }
    pthread_mutex_unlock(&S.lock);
}

void pc_stage_after_fork_child(void)
{
    /* The parent's slots and events are not the child's to use or free, and
     * its copy threads do not exist here.  The child passes through anyway
     * (pc_state.forked_child); this only leaves clean state behind. */
    pthread_mutex_init(&S.lock, NULL);
    pthread_mutex_init(&O.lock, NULL);
    pc_oev_forget_locked(-1);
    S.threads = 0;
    for (int d = 0; d < PC_STAGE_MAX_DEV; d++)
        pc_ring_abandon(d);
    pc_xfer_after_fork_child();
}
