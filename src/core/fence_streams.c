/* fence_streams.c - what the fences must know of streams, devices and
 * captures (fence.h), and forgetting it at a fork or a device reset.  The
 * shared state is in fence_int.h; CUDA-free, like fence.c. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include "core/fence.h"
#include "core/fence_int.h"
#include "util/options.h"
#include "util/stats.h"

/* States abandoned by pc_fence_forget_all (a fork child, a device reset),
 * kept only so that they stay reachable (leak checkers); never used again.
 * Not static: a static that is never read would be optimized away. */
struct pc_fence_state *pc_fence_abandoned;

void pc_fence_stream_created(void *s, int nonblocking)
{
    struct pc_stream *st = calloc(1, sizeof *st);
    int dev = 0;

    if (!st)
        return;
    O->get_device(&dev);
    pc_devmask_add(dev);
    st->s = s;
    st->dev = dev;
    st->nonblocking = nonblocking;
    st->refs = 1;              /* the table's */
    pthread_mutex_lock(&F.lock);
    HASH_ADD_PTR(F.streams, s, st);
    pthread_mutex_unlock(&F.lock);
    PC_STAT_INC(streams_created);
}

void pc_fence_blind(int dev)
{
    if (dev >= 0 && dev < PC_MAX_DEV)
        __atomic_fetch_or(&pc_fence_blind_mask, 1ull << dev, __ATOMIC_RELAXED);
    else
        __atomic_store_n(&pc_fence_blind_any, 1, __ATOMIC_RELAXED);
}

/* An unknown handle is a stream pincache did not see created.  The last
 * handle this thread found known, blocking or already reported is not
 * looked up again.  A blocking one is covered by the legacy stream's event
 * (measured); a non-blocking one may be reading a block that is freed
 * later: blind.  Its device is the stream's own where the runtime can say,
 * else the current one (the back-end's stream_probe). */
static __thread void *pc_tls_known __attribute__((tls_model("initial-exec")));

void pc_fence_stream_seen(void *s)
{
    struct pc_stream *st;
    int nonblocking = 0, dev = -1;

    if (s == 0 || s == PC_STREAM_LEGACY || s == PC_STREAM_PER_THREAD || s == pc_tls_known)
        return;
    pthread_mutex_lock(&F.lock);
    HASH_FIND_PTR(F.streams, &s, st);
    pthread_mutex_unlock(&F.lock);
    if (st) {
        pc_tls_known = s;
        return;
    }
    if (O->stream_probe(s, &nonblocking, &dev) != 0)
        return;
    if (nonblocking)
        pc_fence_blind(dev);   /* said once: the device stays blind */
    pc_tls_known = s;
}

/* The last work of destroyed stream st, on its device dev (current): an
 * event on it joins the zombies, which later fences cover, and is the
 * stream's own for the watches of earlier fences. */
static int pc_zombie_record(int dev, void *arg)
{
    struct pc_stream *st = arg;
    struct pc_ev *e = pc_ev_get(dev);

    if (e && O->event_record(e->ev, st->s) == 0) {
        e->next = F.zombies;
        F.zombies = e;
        pc_zombies_noted();
        e->refs++;
        st->zombie = e;
    } else if (e) {
        pc_ev_put(e);
    }
    return 0;
}

void pc_fence_stream_destroying(void *s)
{
    struct pc_stream *st = NULL;
    int cur = 0;

    pthread_mutex_lock(&F.lock);
    HASH_FIND_PTR(F.streams, &s, st);
    if (st) {
        HASH_DEL(F.streams, st);
        PC_STAT_INC(streams_destroyed);
        /* Its handle is never asked again.  Work still queued on it must
         * stay covered by later fences, and by earlier ones watching it. */
        st->gone = 1;
        if (O->stream_query(s) == PC_FQ_PENDING && O->get_device(&cur) == 0)
            pc_fence_visit(cur, 1ull << st->dev, pc_zombie_record, st);
        pc_stream_unref(st);
    }
    pthread_mutex_unlock(&F.lock);
    if (!st)
        pc_fence_stream_seen(s);
}

void pc_fence_device_used(int dev)
{
    pc_devmask_add(dev);
}

void pc_fence_capture_begin(void)
{
    if (pc_opt.test_capture_blind)
        return;
    pthread_mutex_lock(&F.lock);
    __atomic_store_n(&F.capture, F.capture + 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&F.lock);
}

void pc_fence_capture_end(void)
{
    pthread_mutex_lock(&F.lock);
    if (F.capture > 0)
        __atomic_store_n(&F.capture, F.capture - 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&F.lock);
}

/* Lock-free: read on every pinned allocation.  Written under F.lock. */
int pc_fence_capturing(void)
{
    return __atomic_load_n(&F.capture, __ATOMIC_ACQUIRE);
}

void pc_fence_forget_all(void)
{
    /* The child's copy of the lock may be held by a parent thread that no
     * longer exists; start over.  The parent's events are left alone. */
    struct pc_fence_state *old = malloc(sizeof *old);
    if (old) {
        *old = F;
        old->abandoned_next = pc_fence_abandoned;
        pc_fence_abandoned = old;
    }
    pthread_mutex_init(&F.lock, NULL);
    F.head = F.tail = F.spare = NULL;
    F.zombies = NULL;
    pc_zombies_noted();
    F.streams = NULL;
    F.capture = 0;
    F.next_seq = 0;
    for (int d = 0; d < PC_MAX_DEV; d++) {
        F.evpool[d] = NULL;
        pc_ev_epoch_bump(d);   /* the threads' own events are the parent's */
    }
    __atomic_store_n(&F.done_upto, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&F.devmask, 0, __ATOMIC_RELAXED);
    pc_fence_contexts_changed();
}

/* Drop one reference to e, which belongs to a context being destroyed:
 * it never goes back to the event pool (F.lock held). */
static void pc_ev_forget(struct pc_ev *e)
{
    if (--e->refs <= 0)
        free(e);
}

/* Drop one reference to st, of a device whose context is being destroyed:
 * the event recorded at its destroy dies with the context (F.lock held). */
static void pc_stream_forget(struct pc_stream *st)
{
    if (st->zombie) {
        pc_ev_forget(st->zombie);
        st->zombie = NULL;
    }
    pc_stream_unref(st);
}

void pc_fence_forget_device(int dev)
{
    struct pc_fence *f;
    struct pc_stream *st, *tmp;
    struct pc_ev *e, **zp;
    int k;

    if (dev < 0 || dev >= PC_MAX_DEV)
        return;
    pthread_mutex_lock(&F.lock);
    for (f = F.head; f; f = f->next) {
        for (int i = k = 0; i < f->n; i++) {
            if (f->ev[i]->dev == dev)
                pc_ev_forget(f->ev[i]);
            else
                f->ev[k++] = f->ev[i];
        }
        f->n = k;
        for (int i = k = 0; i < f->nw; i++) {
            if (f->w[i].st->dev == dev)
                pc_stream_forget(f->w[i].st);
            else
                f->w[k++] = f->w[i];
        }
        f->nw = k;
    }
    for (zp = &F.zombies; (e = *zp) != NULL;) {
        if (e->dev == dev) {
            *zp = e->next;
            pc_ev_forget(e);
        } else {
            zp = &e->next;
        }
    }
    pc_zombies_noted();
    pc_ev_epoch_bump(dev);     /* the threads' own events die with the context */
    while ((e = F.evpool[dev]) != NULL) {
        F.evpool[dev] = e->next;
        free(e);
    }
    HASH_ITER(hh, F.streams, st, tmp) {
        if (st->dev == dev) {
            HASH_DEL(F.streams, st);
            pc_stream_forget(st);
        }
    }
    /* Made current again, it counts again (pc_fence_device_used). */
    __atomic_fetch_and(&F.devmask, ~(1ull << dev), __ATOMIC_RELAXED);
    __atomic_fetch_and(&pc_fence_blind_mask, ~(1ull << dev), __ATOMIC_RELAXED);
    pthread_mutex_unlock(&F.lock);
}
