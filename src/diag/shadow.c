/* shadow.c - observe mode's shadow of the cache (what cache mode would have
 * kept, reused and saved), and the registered ranges the report counts;
 * fed by the accounting as each host-memory call closes (diag.c).  Its
 * blocks are also the pinned ranges the copy accounting knows without
 * asking the runtime (core/hostkind.h). */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include "diag/shadow.h"
#include "core/pool.h"
#include "core/hostkind.h"
#include "util/options.h"
#include "util/state.h"
#include "util/stats.h"

/* A block the program holds that is not the cache's: pinned by a real
 * cudaHostAlloc in observe mode, or registered. */
struct pc_shadow {
    void *ptr;
    size_t size;
    int registered;
    UT_hash_handle hh;
};

/* D.lock protects all of D.  Taken only in calls that cost far more than it
 * (real allocations, frees, registrations), never on the cache's hit path. */
static struct {
    pthread_mutex_t lock;
    struct pc_shadow *map;
    uint32_t idle[PC_NCLASS];  /* blocks the cache would hold idle, per size class */
    uint64_t idle_bytes;
} D = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void pc_shadow_add(void *p, size_t size, int registered)
{
    struct pc_shadow *s = calloc(1, sizeof *s), *old = NULL;

    if (!s)
        return;
    s->ptr = p;
    s->size = size;
    s->registered = registered;
    pthread_mutex_lock(&D.lock);
    HASH_REPLACE_PTR(D.map, ptr, s, old);
    pthread_mutex_unlock(&D.lock);
    free(old);
    pc_hostkind_add(p, size);
}

/* Remove p; its size, or 0 when unknown or of the other kind. */
static size_t pc_shadow_take(void *p, int registered)
{
    struct pc_shadow *s = NULL;
    size_t size = 0;

    pthread_mutex_lock(&D.lock);
    HASH_FIND_PTR(D.map, &p, s);
    if (s && s->registered == registered)
        HASH_DEL(D.map, s);
    else
        s = NULL;
    pthread_mutex_unlock(&D.lock);
    if (s) {
        size = s->size;
        free(s);
        pc_hostkind_remove(p);
    }
    return size;
}

/* Observe mode: would cache mode have served this allocation from an idle
 * block?  Fences are not modelled (a fenced block would make it wait or miss). */
static void pc_shadow_alloc(void *p, size_t size, uint64_t ns)
{
    unsigned idx;
    size_t cls = pc_size_class(size, &idx);
    int hit = 0;

    PC_GAUGE_ADD(live_bytes, size);
    PC_GAUGE_ADD(requested_bytes, size);
    if (cls) {
        pthread_mutex_lock(&D.lock);
        if (D.idle[idx]) {
            D.idle[idx]--;
            D.idle_bytes -= cls;
            hit = 1;
        }
        pthread_mutex_unlock(&D.lock);
    }
    if (hit) {
        PC_STAT_INC(predict_hits);
        PC_STAT_ADD(predict_hit_ns, ns);
    }
    pc_shadow_add(p, size, 0);
}

/* Observe mode: a free cache mode would have kept (within the cap). */
static void pc_shadow_free(struct pc_call *c, uint64_t ns)
{
    size_t size = pc_shadow_take(c->ptr, 0), cls;
    unsigned idx;
    int kept = 0;

    if (!size)
        return;
    c->bytes = size;
    PC_GAUGE_ADD(live_bytes, -(int64_t)size);
    PC_GAUGE_ADD(requested_bytes, -(int64_t)size);
    cls = pc_size_class(size, &idx);
    if (!cls)
        return;
    pthread_mutex_lock(&D.lock);
    if (D.idle_bytes + cls <= pc_opt.max_cached) {
        D.idle[idx]++;
        D.idle_bytes += cls;
        kept = 1;
    }
    pthread_mutex_unlock(&D.lock);
    if (kept) {
        PC_STAT_INC(predict_kept);
        PC_STAT_ADD(predict_kept_ns, ns);
    }
}

void pc_shadow_update(struct pc_call *c, uint64_t ns)
{
    size_t size;

    switch (c->api) {
    case PC_API_host_alloc:
    case PC_API_malloc_host:
        if (pc_state.mode == PC_MODE_OBSERVE && c->ptr && *(void **)c->ptr && c->bytes)
            pc_shadow_alloc(*(void **)c->ptr, c->bytes, ns);
        break;
    case PC_API_free_host:
        if (pc_state.mode == PC_MODE_OBSERVE && c->ptr)
            pc_shadow_free(c, ns);
        break;
    case PC_API_host_register:
        pc_shadow_add(c->ptr, c->bytes, 1);
        PC_GAUGE_ADD(registered_bytes, c->bytes);
        break;
    case PC_API_host_unregister:
        size = pc_shadow_take(c->ptr, 1);
        c->bytes = size;
        PC_GAUGE_ADD(registered_bytes, -(int64_t)size);
        break;
    }
}

void pc_shadow_after_fork_child(void)
{
    /* The parent's blocks are not the child's; its entries are leaked. */
    pthread_mutex_init(&D.lock, NULL);
    D.map = NULL;
    memset(D.idle, 0, sizeof D.idle);
    D.idle_bytes = 0;
}
