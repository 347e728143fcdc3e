/* fastdrv.c - the driver side of fast blocks (fastdrv.h).
 *
 * Every call here is the driver's, reached from libcuda or, in a process
 * that has none loaded (the simulated device), through the runtime's
 * cudaGetDriverEntryPointByVersion: none sets the runtime's last error. */
#include "config.h"
#include <pthread.h>
#include <string.h>
#include "stage/fastdrv.h"
#include "stage/ownmem.h"
#include "real/real.h"
#include "util/log.h"

#define PC_FAST_NDEV 64

CUresult (*pc_fast_reg)(void *p, size_t n, unsigned int flags);

static struct {
    CUresult (*get_current)(CUcontext *);
    CUresult (*get_device)(CUdevice *);
    CUresult (*unreg)(void *);
    CUresult (*host_alloc)(void **, size_t, unsigned int);
    CUresult (*free_host)(void *);
    CUresult (*state)(CUdevice, unsigned int *, int *);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
} D;
static pthread_once_t pc_fast_once = PTHREAD_ONCE_INIT;

/* From libcuda; through the runtime only where no libcuda is loaded (a
 * runtime 12 reports a symbol it cannot find as an error, last error
 * included: sim_cudart12.c, and pincache must leave none). */
static void *pc_fast_entry(void *from_libcuda, const char *sym, unsigned int ver)
{
    if (from_libcuda || pc_loaded_path("libcuda.so", NULL, 0))
        return from_libcuda;
    return pc_real_drv_entry(NULL, sym, ver);
}

static void pc_fast_resolve(void)
{
    D.get_current = pc_fast_entry((void *)PC_REAL(cuCtxGetCurrent), "cuCtxGetCurrent", 4000);
    D.get_device = pc_fast_entry((void *)PC_REAL(cuCtxGetDevice), "cuCtxGetDevice", 2000);
    D.unreg = pc_fast_entry((void *)PC_REAL(cuMemHostUnregister), "cuMemHostUnregister", 4000);
    D.host_alloc = pc_fast_entry((void *)PC_REAL(cuMemHostAlloc), "cuMemHostAlloc", 3020);
    D.free_host = pc_fast_entry((void *)PC_REAL(cuMemFreeHost), "cuMemFreeHost", 2000);
    D.state = pc_fast_entry((void *)PC_REAL(cuDevicePrimaryCtxGetState), "cuDevicePrimaryCtxGetState", 7000);
    D.retain = pc_fast_entry((void *)PC_REAL(cuDevicePrimaryCtxRetain), "cuDevicePrimaryCtxRetain", 7000);
    D.release = pc_fast_entry((void *)PC_REAL(cuDevicePrimaryCtxRelease_v2), "cuDevicePrimaryCtxRelease", 11000);
    D.push = pc_fast_entry((void *)PC_REAL(cuCtxPushCurrent_v2), "cuCtxPushCurrent", 4000);
    D.pop = pc_fast_entry((void *)PC_REAL(cuCtxPopCurrent_v2), "cuCtxPopCurrent", 4000);
    __atomic_store_n(&pc_fast_reg,
                     (CUresult (*)(void *, size_t, unsigned int))pc_fast_entry(
                         (void *)PC_REAL(cuMemHostRegister_v2), "cuMemHostRegister", 6050),
                     __ATOMIC_RELEASE);
}

/* ---- device dev's primary context, whatever the calling thread has current */

/* Run fn(dev, arg) in dev's primary context, pushed over the current one
 * where that is another.  1: that context is not active (fn not run); 0:
 * run there (or in the current context where the driver cannot name the
 * primary one).  The primary context is retained only while active, so
 * this never brings one back to life. */
static int pc_fast_in_primary(int dev, void (*fn)(int dev, void *arg), void *arg)
{
    CUcontext cur = NULL, pc = NULL, popped = NULL;
    unsigned int flags = 0;
    int active = 1;

    if (D.state && D.state((CUdevice)dev, &flags, &active) == CUDA_SUCCESS && !active)
        return 1;
    if (!D.retain || !D.release || !D.push || !D.pop || D.retain(&pc, (CUdevice)dev) != CUDA_SUCCESS) {
        fn(dev, arg);
        return 0;
    }
    if (D.get_current && D.get_current(&cur) == CUDA_SUCCESS && cur != pc && D.push(pc) == CUDA_SUCCESS) {
        fn(dev, arg);
        D.pop(&popped);
    } else {
        fn(dev, arg);
    }
    D.release((CUdevice)dev);
    return 0;
}

struct pc_fast_unreg_arg {
    void *base;
    CUresult r;
};

static void pc_fast_unreg_fn(int dev, void *arg)
{
    struct pc_fast_unreg_arg *a = arg;

    (void)dev;
    a->r = D.unreg(a->base);
}

int pc_fast_unregister(void *base, int dev)
{
    CUresult r;

    pthread_once(&pc_fast_once, pc_fast_resolve);
    if (!D.unreg)
        return -1;
    /* The current context first: the primary one, or one the driver
     * accepts the unregistration in.  Only a refusal tries the block's
     * primary context (a thread with another device's or a created
     * context current). */
    r = D.unreg(base);
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) {
        struct pc_fast_unreg_arg a = { base, r };

        if (pc_fast_in_primary(dev, pc_fast_unreg_fn, &a) == 1)
            return 1;
        r = a.r;
    }
    /* Not registered any more: gone with its context. */
    return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? 1 : -1;
}

/* ---- the witnesses
 *
 * Per device, a real 4 KiB cuMemHostAlloc block, made before its first fast
 * block: where a free of a fast block cannot be kept (no fence: a capture
 * that prohibits frees, a broken context, a created context current), the
 * real free of the witness gives the program the answer the runtime gives
 * a cudaHostAlloc block now, refusals and last error included (hostmem.c).
 * W guards the table across that free and the witness's replacement, so
 * two such frees never share one. */
static pthread_mutex_t W = PTHREAD_MUTEX_INITIALIZER;
static void *pc_fast_witness_tab[PC_FAST_NDEV];
/* The device whose context a witness was made in: dev's own, but for a
 * process whose driver cannot push dev's primary context (no libcuda: the
 * simulated device), where it is whichever device was current, and that
 * device's loss takes the witness with it.  W held. */
static int pc_fast_witness_home[PC_FAST_NDEV];

/* In the current context, which the caller has checked is device dev's
 * (a cache miss never comes from a created context: hostmem.c), or in
 * dev's primary context pushed over another (pc_fast_in_primary).  Lock W
 * held. */
static void pc_fast_witness_make(int dev, void *arg)
{
    CUdevice home = -1;
    void *w = NULL;

    (void)arg;
    if (D.host_alloc(&w, 4096, 0) != CUDA_SUCCESS)
        return;
    /* Never the program's to free or to see (stage/ownmem.h). */
    if (pc_own_add(w, 4096) != 0) {
        if (D.free_host)
            D.free_host(w);
        return;
    }
    pc_fast_witness_home[dev] = D.get_device && D.get_device(&home) == CUDA_SUCCESS ? (int)home : dev;
    __atomic_store_n(&pc_fast_witness_tab[dev], w, __ATOMIC_RELEASE);
}

/* The current context is device dev's. */
static int pc_fast_on_device(int dev)
{
    CUcontext cur = NULL;
    CUdevice d = -1;

    return D.get_current && D.get_device && D.get_current(&cur) == CUDA_SUCCESS && cur &&
           D.get_device(&d) == CUDA_SUCCESS && (int)d == dev;
}

int pc_fast_context_ok(int dev)
{
    pthread_once(&pc_fast_once, pc_fast_resolve);
    if (!(pc_fast_reg && D.unreg && D.host_alloc && dev >= 0 && dev < PC_FAST_NDEV && pc_fast_on_device(dev)))
        return 0;
    if (!__atomic_load_n(&pc_fast_witness_tab[dev], __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&W);
        if (!__atomic_load_n(&pc_fast_witness_tab[dev], __ATOMIC_ACQUIRE))
            pc_fast_witness_make(dev, NULL);
        pthread_mutex_unlock(&W);
    }
    return __atomic_load_n(&pc_fast_witness_tab[dev], __ATOMIC_ACQUIRE) != NULL;
}

int pc_fast_free_answer(int dev, int (*real_free)(void *p))
{
    void *w;
    int err;

    if (dev < 0 || dev >= PC_FAST_NDEV)
        return real_free(NULL);
    pthread_mutex_lock(&W);
    w = __atomic_load_n(&pc_fast_witness_tab[dev], __ATOMIC_ACQUIRE);
    err = real_free(w);
    if (w && err == 0) {
        pc_own_remove(w);
        /* The free just allowed (a relaxed capture, a created context
         * current) allows the allocation too; the next free needs one,
         * made in dev's primary context whatever is current here (a
         * witness of another device's or a created context would answer
         * for the wrong one, or die with it: fuzzer seed 81082). */
        __atomic_store_n(&pc_fast_witness_tab[dev], NULL, __ATOMIC_RELEASE);
        pc_fast_in_primary(dev, pc_fast_witness_make, NULL);
    }
    pthread_mutex_unlock(&W);
    return err;
}

int pc_fast_quiet_ready(void)
{
    CUcontext cur = NULL;

    pthread_once(&pc_fast_once, pc_fast_resolve);
    return D.host_alloc && D.get_current && D.get_current(&cur) == CUDA_SUCCESS && cur;
}

CUresult pc_fast_quiet_alloc(void **p, size_t n, unsigned int flags)
{
    pthread_once(&pc_fast_once, pc_fast_resolve);
    return D.host_alloc ? D.host_alloc(p, n, flags) : CUDA_ERROR_NOT_INITIALIZED;
}

void pc_fast_witness_lost(int dev)
{
    if (dev < 0 || dev >= PC_FAST_NDEV)
        return;
    /* Every witness made in dev's context goes with it; a stale one left
     * in the table of pincache's own memory would hide the program's next
     * block at its address (fuzzer seeds 82846-82850, two devices). */
    pthread_mutex_lock(&W);
    for (int d = 0; d < PC_FAST_NDEV; d++) {
        void *w = __atomic_load_n(&pc_fast_witness_tab[d], __ATOMIC_ACQUIRE);

        if (w && (d == dev || pc_fast_witness_home[d] == dev)) {
            pc_own_remove(w);
            __atomic_store_n(&pc_fast_witness_tab[d], NULL, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&W);
}

void pc_fast_drv_after_fork_child(void)
{
    pthread_mutex_init(&W, NULL);
    for (int d = 0; d < PC_FAST_NDEV; d++)
        __atomic_store_n(&pc_fast_witness_tab[d], NULL, __ATOMIC_RELAXED);
}
