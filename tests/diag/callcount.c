/* callcount.c - the CUDA calls one round of a copy and a sync makes reach the
 * simulated runtime (SIM_CALLS=1, tests/doubles/sim_calls.c).  After a warm-up
 * round (start-up, lookups, the first use of a stream), one more round is
 * counted and each entry point printed: "calls NAME N", then "total N".
 * callcount.sh runs it plainly and under the shim: the difference is the
 * calls pincache makes itself.
 *
 *   callcount small      4 KiB cudaMemcpy H2D from malloc'd memory, then
 *                        cudaStreamSynchronize(0)
 *   callcount small-dev  the same with cudaDeviceSynchronize
 *   callcount large      1 MiB (staged), then cudaStreamSynchronize(0)
 *   callcount sync CALL idle|busy
 *                        one synchronizing call alone, CALL: stream
 *                        (cudaStreamSynchronize of a created stream), ptsz
 *                        (cudaStreamSynchronize_ptsz(0), the per-thread
 *                        stream) or device (cudaDeviceSynchronize); busy:
 *                        with a 2 ms kernel in flight on that stream (device:
 *                        on the created stream), launched before the count
 *   callcount copy API DIR MEM [SIZE]
 *                        one copy of SIZE bytes (default 4096) alone, counted
 *                        after a warm-up copy of the same buffer: API memcpy
 *                        (cudaMemcpy) or async (cudaMemcpyAsync on a created
 *                        stream, synchronized after the count); DIR h2d or
 *                        d2h; MEM the host buffer: pageable (malloc'd),
 *                        pinned (cudaMallocHost) or registered (malloc'd,
 *                        then cudaHostRegister)
 *   callcount register   one cudaHostRegister of 64 KiB of malloc'd memory
 *                        with an error pending (a cudaFreeHost of that memory
 *                        failed first), counted alone */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../doubles/sim.h"
#include "../bench/benchlib.h"

static struct bench_calls before;

/* The counted round begins. */
static void count_from(void)
{
    bench_calls_snap(&before);
}

/* It ends: each entry point called since count_from, and the total.
 * 0 when there are counts. */
static int print_counts(void)
{
    return bench_calls_print(&before, 1, "callcount");
}

static void nop(void *arg)
{
    (void)arg;
}

/* The sync modes (see the top). */
static int sync_round(const char *call, const char *state)
{
    int ptsz = strcmp(call, "ptsz") == 0, dev = strcmp(call, "device") == 0;
    int busy = strcmp(state, "busy") == 0;
    cudaStream_t s;
    cudaError_t e = cudaSuccess;

    if ((!ptsz && !dev && strcmp(call, "stream")) || (!busy && strcmp(state, "idle")) ||
        cudaStreamCreate(&s) != cudaSuccess) {
        fprintf(stderr, "callcount: sync stream|ptsz|device idle|busy, or set-up failed\n");
        return 99;
    }
    for (int round = 0; round < 2 && e == cudaSuccess; round++) {
        if (busy && simLaunch(ptsz ? cudaStreamPerThread : s, nop, NULL, 2000) != cudaSuccess)
            return 99;
        if (round == 1)
            count_from();
        e = dev ? cudaDeviceSynchronize() : ptsz ? cudaStreamSynchronize_ptsz(0) : cudaStreamSynchronize(s);
    }
    if (e != cudaSuccess) {
        fprintf(stderr, "callcount: the sync failed: %d\n", (int)e);
        return 1;
    }
    return print_counts();
}

/* The copy mode (see the top). */
static int copy_round(int argc, char **argv)
{
    const char *api = argc > 2 ? argv[2] : "", *dir = argc > 3 ? argv[3] : "", *mem = argc > 4 ? argv[4] : "";
    size_t n = argc > 5 ? strtoul(argv[5], NULL, 0) : 4096;
    int async = strcmp(api, "async") == 0, h2d = strcmp(dir, "h2d") == 0;
    int pinned = strcmp(mem, "pinned") == 0, reg = strcmp(mem, "registered") == 0;
    enum cudaMemcpyKind kind = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    void *host = NULL, *dev = NULL;
    cudaStream_t s;
    cudaError_t e = cudaSuccess;

    if ((!async && strcmp(api, "memcpy")) || (!h2d && strcmp(dir, "d2h")) ||
        (!pinned && !reg && strcmp(mem, "pageable")) || n == 0 || cudaStreamCreate(&s) != cudaSuccess ||
        cudaMalloc(&dev, n) != cudaSuccess ||
        (pinned ? cudaMallocHost(&host, n) != cudaSuccess : (host = malloc(n)) == NULL) ||
        (reg && cudaHostRegister(host, n, cudaHostRegisterDefault) != cudaSuccess)) {
        fprintf(stderr, "callcount: copy memcpy|async h2d|d2h pageable|pinned|registered [SIZE], or set-up failed\n");
        return 99;
    }
    memset(host, 7, n);
    for (int round = 0; round < 2 && e == cudaSuccess; round++) {
        void *dst = h2d ? dev : host;
        const void *src = h2d ? host : dev;

        if (round == 1)
            count_from();
        e = async ? cudaMemcpyAsync(dst, src, n, kind, s) : cudaMemcpy(dst, src, n, kind);
        if (round == 1 && e == cudaSuccess && print_counts() != 0)
            return 1;
        if (e == cudaSuccess && async)
            e = cudaStreamSynchronize(s);
    }
    if (reg)
        cudaHostUnregister(host);
    if (pinned)
        cudaFreeHost(host);
    else
        free(host);
    cudaFree(dev);
    cudaStreamDestroy(s);
    if (e != cudaSuccess) {
        fprintf(stderr, "callcount: the copy failed: %d\n", (int)e);
        return 1;
    }
    return 0;
}

/* The register mode (see the top). */
static int register_round(void)
{
    void *host = NULL;
    cudaError_t e;

    if (posix_memalign(&host, 4096, 65536) || cudaFree(NULL) != cudaSuccess ||
        cudaFreeHost(host) != cudaErrorInvalidValue) {
        fprintf(stderr, "callcount: register: set-up failed\n");
        return 99;
    }
    count_from();
    e = cudaHostRegister(host, 65536, cudaHostRegisterDefault);
    if (e == cudaSuccess && print_counts() != 0)
        return 1;
    if (e != cudaSuccess || cudaPeekAtLastError() != cudaErrorInvalidValue) {
        fprintf(stderr, "callcount: register: %d, or the pending error went\n", (int)e);
        return 1;
    }
    cudaHostUnregister(host);
    free(host);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "small";
    size_t n = strcmp(what, "large") == 0 ? (size_t)1 << 20 : 4096;
    int devsync = strcmp(what, "small-dev") == 0;
    char *host;
    void *dev = NULL;
    int rc = 99;

    if (strcmp(what, "sync") == 0)
        return sync_round(argc > 2 ? argv[2] : "", argc > 3 ? argv[3] : "");
    if (strcmp(what, "copy") == 0)
        return copy_round(argc, argv);
    if (strcmp(what, "register") == 0)
        return register_round();
    host = malloc(n);
    if (!host || cudaMalloc(&dev, n) != cudaSuccess) {
        fprintf(stderr, "callcount: setup failed\n");
        goto out;
    }
    memset(host, 7, n);
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            count_from();
        if (cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) != cudaSuccess ||
            (devsync ? cudaDeviceSynchronize() : cudaStreamSynchronize(0)) != cudaSuccess) {
            fprintf(stderr, "callcount: copy or sync failed\n");
            rc = 1;
            goto out;
        }
    }
    rc = print_counts();
out:
    free(host);
    return rc;
}
