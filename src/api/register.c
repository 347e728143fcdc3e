/* register.c - registration of the program's own memory (register.h): the
 * real call, counted, and the ranges marked MADV_DONTFORK. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uthash.h>
#include "api/register.h"
#include "api/flavour.h"
#include "api/hostmem.h"
#include "stage/fastalloc.h"
#include "stage/fastdrv.h"
#include "util/state.h"
#include "util/log.h"
#include "util/options.h"
#include "util/stats.h"
#include "diag/diag.h"
#include "core/hostkind.h"
#include "core/cache.h"
#include "real/real.h"

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
 * the memory for something else. */

/* The ranges marked, by the pointer the program registered. */
struct pc_dontfork {
    void *key;                 /* the pointer the program registered */
    char *start;               /* its whole pages, marked */
    size_t len;
    size_t size;               /* its registered size, accounted */
    UT_hash_handle hh;
};
static pthread_mutex_t pc_dontfork_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pc_dontfork *pc_dontfork_map;

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
void pc_register_before_fork(void)
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

void pc_register_after_fork_child(void)
{
    /* The DONTFORK ranges are not mapped here: never madvise them. */
    pthread_mutex_init(&pc_dontfork_lock, NULL);
    pc_dontfork_map = NULL;
}

/* Out of pinned memory (2, in both APIs) where plainly there might have
 * been room: the cache's idle blocks and the staging rings are pincache's,
 * so they go and the registration is tried again, as an allocation's is
 * (core/pool.c).  The first failure must not show.  With no error pending,
 * the runtime's is cleared before the retry, whose answer stands.  With one
 * pending (which a failed runtime call would replace), the attempts go to
 * the driver, which keeps no last error, and only a failure that stays is
 * the runtime's own call and answer; with no driver or no context current
 * to try it quietly, room is made first and the runtime's one call follows
 * (api/cache_cuda.c decides an allocation's attempts the same way). */
static int pc_register_real(const struct pc_flavour *fl, void *p, size_t size, unsigned int flags)
{
    int r;

    /* Only the cache mode holds pinned memory of pincache's: elsewhere
     * (off, observe, a fork child) exactly the real call. */
    if (pc_state.mode != PC_MODE_CACHE || pc_state.forked_child)
        return fl->reg(p, size, flags);
    if (fl->runtime && PC_CALL_REAL(cudaPeekAtLastError) != cudaSuccess) {
        if (!pc_fast_quiet_ready() || !pc_fast_reg) {
            (void)pc_cache_make_room();
            return fl->reg(p, size, flags);
        }
        r = pc_fast_reg(p, size, flags);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && pc_cache_make_room()) {
            PC_STAT_INC(register_oom_retries);
            r = pc_fast_reg(p, size, flags);
        }
        return r == CUDA_SUCCESS ? 0 : fl->reg(p, size, flags);
    }
    r = fl->reg(p, size, flags);
    if (r != cudaErrorMemoryAllocation || !pc_cache_make_room())
        return r;
    PC_STAT_INC(register_oom_retries);
    if (fl->runtime)
        PC_CALL_REAL(cudaGetLastError);     /* ours: nothing was pending */
    return fl->reg(p, size, flags);
}

/* Registration is counted, then passed through (runtime or driver).
 * Inside a fast block (stage/fastalloc.h) the real call would answer
 * "already registered" (712) where a cudaHostAlloc block gets "invalid
 * value" (1, measured on the H200): flags no runtime accepts make the real
 * call give exactly that answer, last error included, and nothing else. */
static int pc_register(const struct pc_flavour *fl, void *p, size_t size, unsigned int flags)
{
    int r;

    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF) {
        PC_STAT_INC(register_calls);
        PC_STAT_ADD(register_bytes, size);
    }
    if (pc_fast_contains(p))
        return fl->reg(p, size, ~0u);
    r = pc_register_real(fl, p, size, flags);
    if (r == 0) {
        pc_hostkind_changed();
        pc_dontfork_add(p, size);
    }
    return r;
}

static int pc_unregister(const struct pc_flavour *fl, void *p)
{
    int r;

    pc_mark_used();
    if (pc_state.mode != PC_MODE_OFF)
        PC_STAT_INC(unregister_calls);
    pc_diag_probe_device();
    /* Freed to the cache, or pincache's own: unregistered memory plainly
     * (713, last error included). */
    p = pc_host_as_seen(p);
    /* A fast block's base would be unregistered for real.  The H200 answers
     * 1 for a cudaHostAlloc block's base (gpu_errors, run 57) and for any
     * registered block's interior pointer: the real call on the byte after
     * the base gives exactly that, last error included. */
    if (pc_fast_contains(p) == 2)
        return fl->unreg((char *)p + 1);
    r = fl->unreg(p);
    if (r == 0)
        pc_dontfork_remove(p);
    return r;
}

cudaError_t pc_host_register(void *p, size_t size, unsigned int flags)
{
    return (cudaError_t)pc_register(&pc_flavour_rt, p, size, flags);
}

cudaError_t pc_host_unregister(void *p)
{
    return (cudaError_t)pc_unregister(&pc_flavour_rt, p);
}

CUresult pc_drv_host_register(void *p, size_t size, unsigned int flags)
{
    return (CUresult)pc_register(&pc_flavour_drv, p, size, flags);
}

CUresult pc_drv_host_unregister(void *p)
{
    return (CUresult)pc_unregister(&pc_flavour_drv, p);
}
