/* ring.c - the pinned rings of staging and their slots (see ring.h).
 * Every slot's DMA is followed by a checkpoint, and the slot is written
 * (H2D) or read (D2H) again only once that checkpoint has completed. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "stage/ring.h"
#include "stage/ownmem.h"
#include "stage/fastalloc.h"
#include "util/limits.h"
#include "util/log.h"
#include "util/options.h"
#include "util/stats.h"

#define PC_STAGE_RETRY_NS 1000000000ull   /* after a failed ring allocation */

struct pc_rings pc_rings = { PTHREAD_MUTEX_INITIALIZER, { NULL }, NULL };

/* A chunk given back: no longer pincache's own, a fast block, else the
 * runtime's. */
static void pc_ring_free_chunk(void *buf)
{
    pc_own_remove(buf);
    if (!pc_fast_release(buf))
        PC_CALL_REAL(cudaFreeHost, buf);
}

/* Drop a ring (device reset, fork): its memory may belong to nobody now, so
 * it is never touched again; kept on a list so it stays reachable. */
static void pc_ring_abandon(int dev)
{
    struct pc_ring *r = pc_rings.ring[dev];
    if (!r)
        return;
    for (unsigned i = 0; i < r->nalloc; i++)
        pc_own_remove(r->bufs[i]);
    r->abandoned_next = pc_rings.abandoned;
    pc_rings.abandoned = r;
    pc_rings.ring[dev] = NULL;
}

struct pc_ring *pc_ring_get(int dev)
{
    struct pc_ring *r = pc_rings.ring[dev];
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
    r->dev = dev;
    pc_rings.ring[dev] = r;
    return r;
}

/* Of want slots, those a memory limit leaves room for (util/limits.h): the
 * ring is pinned memory the program never asked for, and where it is
 * refused the runtime copies through its own buffers. */
static unsigned pc_ring_room(struct pc_ring *r, unsigned want)
{
    static int told;
    long spare = pc_limits_memory_spare(pc_limits_memory(pc_opt.test_limits_root));
    size_t fit;

    if (spare == PC_LIMIT_NONE)
        return want;
    fit = r->nalloc + (size_t)spare / r->chunk;
    if (fit >= want)
        return want;
    r->retry_ns = pc_now_ns() + PC_STAGE_RETRY_NS;
    pc_log_once(&told, PC_LOG_INFO, "staging ring: a memory limit (memory.max) leaves room for %zu of "
                "%u chunks; copies beyond them go to the runtime", fit, r->nslot);
    return (unsigned)fit;
}

/* Allocate slots up to want (the current device is the ring's).  The ring
 * grows only as large copies need it, and a failure (pinned memory short,
 * or a memory limit near) is retried at most once a second.  Returns the
 * slots available. */
unsigned pc_ring_grow(struct pc_ring *r, unsigned want)
{
    static int warned;

    if (want > r->nslot)
        want = r->nslot;
    if (r->nalloc >= want || (r->retry_ns && pc_now_ns() < r->retry_ns))
        return r->nalloc;
    want = pc_ring_room(r, want);
    while (r->nalloc < want) {
        struct pc_slot *s = &r->slot[r->nalloc];
        cudaError_t err;
        void *buf = NULL;
        cudaEvent_t ev;

        /* A slot shed (pc_ring_shed) kept its event. */
        ev = s->ev;
        err = ev ? cudaSuccess : PC_CALL_REAL(cudaEventCreateWithFlags, &ev, cudaEventDisableTiming);
        if (err == cudaSuccess) {
            /* Ours, never the program's cache: a fast block (the staging
             * lock is held), else the real call. */
            if (pc_fast_alloc(&buf, r->chunk, cudaHostAllocPortable, r->dev, 1) == 0)
                PC_STAT_INC(fast_ring_blocks);
            else
                err = PC_CALL_REAL(cudaHostAlloc, &buf, r->chunk, cudaHostAllocPortable);
            s->ev = ev;          /* kept for the next attempt */
            /* Never the program's to free or to see (stage/ownmem.h). */
            if (err == cudaSuccess && pc_own_add(buf, r->chunk) != 0) {
                pc_ring_free_chunk(buf);
                err = cudaErrorMemoryAllocation;
            }
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
        s->ev_seq = 0;
        s->pending = 0;
        r->bufs[r->nalloc++] = buf;
        PC_GAUGE_ADD(stage_ring_bytes, r->chunk);
    }
    return r->nalloc;
}

/* cudaDeviceReset takes the ring's pinned memory and events with the
 * context.  pc_stage_forget_device forgets the ring before a reset made
 * through us; this catches the others (a driver-level reset): a ring whose
 * first chunk is no longer pinned memory is dropped (never touched again,
 * not freed) and built anew. */
struct pc_ring *pc_ring_check(struct pc_ring *r, int dev)
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

void pc_ring_break(struct pc_ring *r, const char *what, cudaError_t err)
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

/* Slot c's checkpoint is done: so is every DMA it covers. */
static void pc_ring_seen(struct pc_ring *r, unsigned c)
{
    const struct pc_slot *cp = &r->slot[c];

    for (unsigned k = 0; k < cp->count; k++) {
        struct pc_slot *s = &r->slot[(cp->first + k) % cp->mod];
        if (s->pending && s->cover == c && s->seq == cp->ev_seq)
            s->pending = 0;
    }
}

int pc_ring_checkpoint(struct pc_ring *r, const struct pc_plan *p, unsigned first, unsigned count,
                       unsigned nslot, cudaError_t *err)
{
    unsigned last = (first + count - 1) % nslot;
    pthread_t self = pthread_self();
    int held = pc_rt_held_for_stream(p);

    *err = PC_CALL_REAL(cudaEventRecord, r->slot[last].ev, p->h);
    if (*err != cudaSuccess)
        return -1;
    r->slot[last].ev_seq = ++r->seq;
    r->slot[last].first = first;
    r->slot[last].count = count;
    r->slot[last].mod = nslot;
    for (unsigned k = 0; k < count; k++) {
        struct pc_slot *s = &r->slot[(first + k) % nslot];
        s->pending = 1;
        s->cover = last;
        s->seq = r->seq;
        s->on = p->h;
        s->by = self;
        s->held = held;
    }
    return 0;
}

/* 1: slot i is free (its last DMA is done), 0: not yet, -1: *err says why
 * not, PC_SLOT_ELSEWHERE: busy, and the copy may not wait for it (the rest
 * of the copy goes to the runtime).  block: wait for it (the caller has
 * nothing else to do), where the runtime would wait too
 * (pc_rt_holds_for_stream; read: bytes of the source read so far), or where
 * the DMA is one of an earlier copy on the same stream that held its caller
 * for the work ahead of it (pc_rt_held_for_stream): a DMA queued on another
 * stream may be held by work that waits for this very thread.  One question
 * of its checkpoint answers for every slot it covers. */
int pc_slot_free(const struct pc_plan *p, struct pc_ring *r, unsigned i, size_t read, int block,
                 cudaError_t *err)
{
    struct pc_slot *s = &r->slot[i], *c;
    int may_wait;
    cudaError_t e;

    if (!s->pending)
        return 1;
    if (pc_opt.test_stage_unsafe) {
        s->pending = 0;      /* TEST ONLY: reuse without waiting for the DMA */
        return 1;
    }
    c = &r->slot[s->cover];
    if (c->ev_seq != s->seq) {
        /* Cannot be: a checkpoint is recorded again only once its slot is
         * free, and seeing it done freed this one too.  Trust nothing. */
        *err = cudaErrorUnknown;
        return -1;
    }
    /* held: an earlier copy's only, never the copy's own DMAs (behind the
     * same work as its first 2 MiB). */
    may_wait = pc_slot_ours(p, s) &&
               ((s->held && s->seq <= r->copy_seq) || pc_rt_holds_for_stream(p, read));
    if (block && may_wait) {
        uint64_t t0 = pc_now_ns();
        e = PC_CALL_REAL(cudaEventSynchronize, c->ev);
        PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
    } else {
        e = PC_CALL_REAL(cudaEventQuery, c->ev);
    }
    /* NotReady is not recorded as the last error (measured on the H200:
     * tests/gpu/gpu_fence_facts.cu, fact d): nothing to clear. */
    if (e == cudaErrorNotReady)
        return block ? PC_SLOT_ELSEWHERE : 0;
    if (e != cudaSuccess) {
        *err = e;
        return -1;
    }
    pc_ring_seen(r, s->cover);
    return 1;
}

int pc_slot_wait(struct pc_ring *r, unsigned i, cudaError_t *err)
{
    unsigned c = r->slot[i].cover;
    uint64_t t0 = pc_now_ns();

    *err = PC_CALL_REAL(cudaEventSynchronize, r->slot[c].ev);
    PC_STAT_ADD(stage_wait_ns, pc_now_ns() - t0);
    if (*err != cudaSuccess)
        return -1;
    pc_ring_seen(r, c);
    return 0;
}

size_t pc_ring_shed(void)
{
    size_t shed = 0;

    /* A blocking lock: a copy staging now ends (the allocation that needs
     * its memory waits, as the cache's releases before it waited for the
     * device), and its DMAs are waited for too. */
    pthread_mutex_lock(&pc_rings.lock);
    for (int d = 0; d < PC_STAGE_MAX_DEV; d++) {
        struct pc_ring *r = pc_rings.ring[d];
        unsigned i;

        if (!r || r->broken)
            continue;
        for (i = 0; i < r->nalloc; i++)
            if (r->slot[i].pending && PC_CALL_REAL(cudaEventSynchronize, r->slot[r->slot[i].cover].ev) == cudaSuccess)
                pc_ring_seen(r, r->slot[i].cover);
        for (i = 0; i < r->nalloc && !r->slot[i].pending; i++)
            ;
        if (i < r->nalloc)
            continue;            /* a DMA failed: the context's sticky error, the program's to see */
        for (i = 0; i < r->nalloc; i++) {
            pc_ring_free_chunk(r->slot[i].buf);
            r->slot[i].buf = r->bufs[i] = NULL;
        }
        PC_STAT_ADD(stage_ring_shed, r->nalloc);
        PC_GAUGE_ADD(stage_ring_bytes, -(int64_t)(r->nalloc * r->chunk));
        shed += (size_t)r->nalloc * r->chunk;
        r->nalloc = r->head = 0;
        r->retry_ns = pc_now_ns() + PC_STAGE_RETRY_NS;
    }
    pthread_mutex_unlock(&pc_rings.lock);
    return shed;
}

void pc_ring_forget(int dev)
{
    struct pc_ring *r;

    /* A blocking lock: a copy staging on this device now is racing the
     * program's own reset; let it finish first. */
    pthread_mutex_lock(&pc_rings.lock);
    r = pc_rings.ring[dev];
    if (r) {
        /* Never touched again: after the reset its addresses may be handed
         * out to new pinned allocations. */
        PC_GAUGE_ADD(stage_ring_bytes, -(int64_t)(r->nalloc * r->chunk));
        pc_ring_abandon(dev);
    }
    pthread_mutex_unlock(&pc_rings.lock);
}

void pc_ring_after_fork_child(void)
{
    pthread_mutex_init(&pc_rings.lock, NULL);
    for (int d = 0; d < PC_STAGE_MAX_DEV; d++)
        pc_ring_abandon(d);
}
