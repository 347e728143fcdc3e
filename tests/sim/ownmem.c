/* ownmem - pincache's own pinned memory (the staging ring's chunks, the
 * fast blocks' witness) is nothing the program can see or free.
 *
 * The program makes a pinned block of its own (under
 * PINCACHE_FAST_ALLOC_MIN=0 a fast block, so pincache makes its witness)
 * and a pageable copy each way large enough to be staged (so pincache makes
 * its ring), then walks every page of every readable and writable mapping
 * of the process outside its own block and asks each page what a program
 * holding a dangling pointer there would ask: cudaPointerGetAttributes
 * (host memory?), cudaHostGetFlags (pinned?), cudaHostUnregister (anything
 * but "not registered"?) and cudaFreeHost.  Plainly nothing but the
 * program's block is pinned, so every page must answer "no" and every free
 * must fail.  The driver's forms are asked too, through the runtime's entry
 * points (cuPointerGetAttribute, cuMemHostGetFlags, cuMemHostUnregister,
 * cuMemFreeHost first, then cudaFreeHost), where the runtime has them.  On
 * the simulated device a second block, freed before the walk, is an idle
 * block of the cache under pincache: its pages must answer as plainly.
 * Then the copies must still carry their bytes,
 * and a free of the program's block inside a global capture must still be
 * refused (900), as it is plainly.  Prints TAP and "pages=N visible=N
 * pinned=N unreg=N freed=N".  -c: counts only, no test point on them (on a real
 * GPU, tests/sim/run-gpu.sh compares them with the plain run's: the
 * driver's own memory is not the simulated device's). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "../tap.h"

#define BLOCK (64u << 10)
#define COPY (8u << 20)
#define MAXMAP 4096
#define MAXREGION (1ull << 30)   /* larger mappings are reservations, not pinned blocks */

static struct {
    __typeof__(&cuPointerGetAttribute) attr;
    __typeof__(&cuMemHostGetFlags) flags;
    __typeof__(&cuMemFreeHost) free;
    __typeof__(&cuMemHostUnregister) unreg;
} drv;

/* The driver's function sym through the runtime, or NULL. */
static void *drv_entry(const char *sym)
{
    enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
    void *fn = NULL;

    if (cudaGetDriverEntryPointByVersion(sym, &fn, CUDA_VERSION, cudaEnableDefault, &st) != cudaSuccess ||
        st != cudaDriverEntryPointSuccess)
        fn = NULL;
    cudaGetLastError();
    return fn;
}

/* What a dangling pointer p gets: counted into v (host memory), g (pinned),
 * u (an unregister that answers other than "not registered") and f
 * (freed), by the runtime's calls and, where found, the driver's. */
static void ask(void *p, size_t *v, size_t *g, size_t *u, size_t *f)
{
    struct cudaPointerAttributes at;
    unsigned int flags = 0, type = 0;

    memset(&at, 0, sizeof at);
    if (cudaPointerGetAttributes(&at, p) == cudaSuccess && at.type == cudaMemoryTypeHost)
        ++*v;
    if (cudaHostGetFlags(&flags, p) == cudaSuccess)
        ++*g;
    if (drv.attr && drv.attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) == CUDA_SUCCESS &&
        type == CU_MEMORYTYPE_HOST)
        ++*v;
    if (drv.flags && drv.flags(&flags, p) == CUDA_SUCCESS)
        ++*g;
    if (cudaHostUnregister(p) != cudaErrorHostMemoryNotRegistered)
        ++*u;
    if (drv.unreg && drv.unreg(p) != CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
        ++*u;
    if (drv.free && drv.free(p) == CUDA_SUCCESS)
        ++*f;
    if (cudaFreeHost(p) == cudaSuccess)
        ++*f;
    cudaGetLastError();
}

struct range {
    uintptr_t lo, hi;
};

/* The readable and writable mappings, read at once (the walk's own calls
 * may map more). */
static int read_maps(struct range *r, int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512], perms[8];
    unsigned long lo, hi;
    int n = 0;

    if (!f)
        return -1;
    while (n < max && fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[0] == 'r' && perms[1] == 'w' &&
            hi - lo <= MAXREGION)
            r[n++] = (struct range){ lo, hi };
    fclose(f);
    return n;
}

/* A staged copy each way: the bytes of pattern k come back. */
static int round_trip(char *src, char *dst, void *dev, int k)
{
    for (size_t i = 0; i < COPY; i++)
        src[i] = (char)(i * 7 + (size_t)k);
    memset(dst, 0, COPY);
    if (cudaMemcpy(dev, src, COPY, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dst, dev, COPY, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 0;
    return memcmp(src, dst, COPY) == 0;
}

int main(int argc, char **argv)
{
    int counts_only = argc > 1 && strcmp(argv[1], "-c") == 0;
    static struct range maps[MAXMAP];
    long page = sysconf(_SC_PAGESIZE);
    size_t pages = 0, visible = 0, pinned = 0, unreg = 0, freed = 0;
    char *block = NULL, *idle = NULL, *src = malloc(COPY), *dst = malloc(COPY);
    void *dev = NULL;
    cudaStream_t s = NULL;
    cudaGraph_t g = NULL;
    int n;

    if (!src || !dst)
        return 1;
    ok(cudaFree(0) == cudaSuccess, "the device starts");
    ok(cudaHostAlloc((void **)&block, BLOCK, cudaHostAllocDefault) == cudaSuccess, "a pinned block");
    ok(cudaMalloc(&dev, COPY) == cudaSuccess, "a device buffer");
    drv.attr = (__typeof__(drv.attr))drv_entry("cuPointerGetAttribute");
    drv.flags = (__typeof__(drv.flags))drv_entry("cuMemHostGetFlags");
    drv.free = (__typeof__(drv.free))drv_entry("cuMemFreeHost");
    drv.unreg = (__typeof__(drv.unreg))drv_entry("cuMemHostUnregister");
    diag("driver entry points: cuPointerGetAttribute %s, cuMemHostGetFlags %s, cuMemFreeHost %s, "
         "cuMemHostUnregister %s", drv.attr ? "found" : "absent", drv.flags ? "found" : "absent",
         drv.free ? "found" : "absent", drv.unreg ? "found" : "absent");
    /* A block freed before the walk: plainly unmapped, under pincache an
     * idle block of the cache, which dangling pointers must find as
     * plainly.  Not on a real GPU (-c), whose driver may keep a small
     * freed block's pages in a chunk of its own: unmeasured. */
    if (!counts_only) {
        ok(cudaHostAlloc((void **)&idle, BLOCK, cudaHostAllocDefault) == cudaSuccess &&
           cudaFreeHost(idle) == cudaSuccess, "a pinned block allocated and freed");
    }
    memset(block, 1, BLOCK);
    ok(round_trip(src, dst, dev, 1), "pageable copies each way, before the walk");

    n = read_maps(maps, MAXMAP);
    ok(n > 0, "%d mappings to walk", n);
    for (int i = 0; i < n; i++) {
        for (uintptr_t a = maps[i].lo; a < maps[i].hi; a += (uintptr_t)page) {
            if (a >= (uintptr_t)block && a < (uintptr_t)block + BLOCK)
                continue;
            if (a >= (uintptr_t)dev && a < (uintptr_t)dev + COPY)
                continue;    /* the simulated device's memory is host memory too */
            pages++;
            ask((void *)a, &visible, &pinned, &unreg, &freed);
        }
    }
    printf("pages=%zu visible=%zu pinned=%zu unreg=%zu freed=%zu\n", pages, visible, pinned, unreg, freed);
    ok(pages > 1000, "pages walked (%zu)", pages);
    if (!counts_only) {
        ok(visible == 0, "no page but the program's block is host memory to the pointer queries (%zu answers)",
           visible);
        ok(pinned == 0, "no page but the program's block is pinned to the flags queries (%zu answers)", pinned);
        ok(unreg == 0, "every page is unregistered memory to an unregister (%zu other answers)", unreg);
        ok(freed == 0, "no page but the program's block can be freed (%zu were)", freed);
    }
    ok(round_trip(src, dst, dev, 2), "pageable copies each way, after the walk");

    ok(cudaStreamCreate(&s) == cudaSuccess, "a stream");
    ok(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "a global capture");
    is_int(cudaFreeHost(block), cudaErrorStreamCaptureUnsupported, "the block's free inside it is refused");
    is_int(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated, "and invalidates the capture");
    is_int(cudaFreeHost(block), cudaSuccess, "the block's free after it");
    cudaGetLastError();
    cudaStreamDestroy(s);
    cudaFree(dev);
    free(src);
    free(dst);
    return done_testing();
}
