/* inject - one injected event failure between pincache and the runtime.
 *
 * Preloaded after libpincache.so (LD_PRELOAD="libpincache.so libinject.so"),
 * so pincache's real-function lookups (dlsym RTLD_NEXT) find these, while the
 * program's own calls still reach pincache first.  The Nth call of the chosen
 * function is forwarded with a dead event handle: the runtime itself returns
 * the error and records it as the thread's last error, as it does for an
 * event lost to cudaDeviceReset.  Everything else is forwarded unchanged.
 *   INJECT_FN=record|query|sync   INJECT_AT=N (1-based)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>

static long calls;
static char dead_event[64] __attribute__((aligned(64)));   /* no magic: not an event */

/* The event to pass on: a dead one for the chosen call. */
static cudaEvent_t pick(const char *fn, cudaEvent_t ev)
{
    const char *want = getenv("INJECT_FN"), *at = getenv("INJECT_AT");

    if (!want || strcmp(want, fn) != 0)
        return ev;
    if (__atomic_add_fetch(&calls, 1, __ATOMIC_RELAXED) != (at ? atol(at) : 1))
        return ev;
    return (cudaEvent_t)(void *)dead_event;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

__attribute__((visibility("default"))) cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t s)
{
    return NEXT(cudaEventRecord)(pick("record", ev), s);
}

__attribute__((visibility("default"))) cudaError_t cudaEventQuery(cudaEvent_t ev)
{
    return NEXT(cudaEventQuery)(pick("query", ev));
}

__attribute__((visibility("default"))) cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
    return NEXT(cudaEventSynchronize)(pick("sync", ev));
}
