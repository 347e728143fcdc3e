/* synctax.c - what pincache adds to calls it should add nothing to (issue
 * 19): idle synchronizing calls (item 1, "no tax on synchronizing calls")
 * and small copies it leaves to the runtime (item 2, "never slower than
 * the driver, at any size").  Each case is timed in batches with the
 * monotonic clock, the cases' batches alternating:
 *
 *   stream   idle cudaStreamSynchronize on a created stream
 *   device   idle cudaDeviceSynchronize
 *   API-DIR-MEM-SIZE   one small copy, API: memcpy (cudaMemcpy) or async
 *            (cudaMemcpyAsync on the created stream, then
 *            cudaStreamSynchronize of it, as PyTorch's blocking copy);
 *            DIR: h2d or d2h; MEM: the host buffer, pageable (malloc'd,
 *            its pages written first) or pinned (cudaMallocHost); SIZE:
 *            4k or 64k (below PINCACHE_STAGE_MIN: never staged)
 *
 * Prints, per call (a copy: per copy, its sync included), the median and
 * the minimum over the batches:
 *
 *     SYNCTAX NAME median_ns=X min_ns=X batches=B calls=C
 *
 * tests/bench/synctax.sh runs it plainly and under pincache, alternately, and
 * prints the difference.  Built twice: by make check against the simulated
 * runtime (tests/bench/synctax_sim), and by synctax.sh with nvcc from
 * synctax.cu, which includes this file and warms the device up with a real
 * kernel (SYNCTAX_WARM).  Exit status 3: no CUDA device.
 *
 *   synctax [BATCHES [CALLS [WHAT]]]
 *     default 51 batches of 2000 calls; a copy's batch makes CALLS/10
 *     copies (at least 1): a small copy costs 10-40 idle syncs on an H200.
 *     WHAT: all (the default), sync (the two syncs) or copy (the copies). */
#include <cuda_runtime_api.h>
#include "benchlib.h"

#ifndef SYNCTAX_WARM
#define SYNCTAX_WARM(s) ((void)(s))
#endif

#define SYNCTAX_BUF ((size_t)64 << 10)
#define SYNCTAX_COPY_DIV 10

/* A case: a sync (copy 0) or a copy. */
struct synctax_case {
    char name[40];
    int copy;                /* 0: a sync; 1: cudaMemcpy; 2: cudaMemcpyAsync + cudaStreamSynchronize */
    int dev;                 /* a sync: cudaDeviceSynchronize */
    int h2d, pinned;
    size_t n;
};

static cudaStream_t synctax_s;
static void *synctax_host[2], *synctax_dev;   /* host: [0] pageable, [1] pinned */

static cudaError_t synctax_one(const struct synctax_case *k)
{
    void *h = synctax_host[k->pinned];
    void *dst = k->h2d ? synctax_dev : h;
    const void *src = k->h2d ? h : synctax_dev;
    enum cudaMemcpyKind kind = k->h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    cudaError_t e;

    switch (k->copy) {
    case 0:
        return k->dev ? cudaDeviceSynchronize() : cudaStreamSynchronize(synctax_s);
    case 1:
        return cudaMemcpy(dst, src, k->n, kind);
    default:
        e = cudaMemcpyAsync(dst, src, k->n, kind, synctax_s);
        return e != cudaSuccess ? e : cudaStreamSynchronize(synctax_s);
    }
}

/* One batch of calls of case k: ns per call, or -1 when a call failed. */
static double synctax_batch(const struct synctax_case *k, int calls)
{
    uint64_t t0 = bench_ns();
    cudaError_t e = cudaSuccess;

    for (int i = 0; i < calls && e == cudaSuccess; i++)
        e = synctax_one(k);
    if (e != cudaSuccess) {
        fprintf(stderr, "synctax: %s failed: %d\n", k->name, (int)e);
        return -1;
    }
    return (double)(bench_ns() - t0) / calls;
}

/* How many calls a batch of case k makes. */
static int synctax_calls(const struct synctax_case *k, int calls)
{
    int c = k->copy ? calls / SYNCTAX_COPY_DIV : calls;

    return c > 0 ? c : 1;
}

/* The cases WHAT names, into k (at least 18 of them): how many. */
static int synctax_cases(const char *what, struct synctax_case *k)
{
    static const char *const api[3] = { "", "memcpy", "async" };
    int n = 0, syncs = strcmp(what, "copy") != 0, copies = strcmp(what, "sync") != 0;

    for (int d = 0; syncs && d < 2; d++) {
        memset(&k[n], 0, sizeof k[n]);
        strcpy(k[n].name, d ? "device" : "stream");
        k[n++].dev = d;
    }
    for (int a = 1; copies && a <= 2; a++)
        for (int h2d = 1; h2d >= 0; h2d--)
            for (int pin = 0; pin < 2; pin++)
                for (int big = 0; big < 2; big++) {
                    memset(&k[n], 0, sizeof k[n]);
                    k[n].copy = a;
                    k[n].h2d = h2d;
                    k[n].pinned = pin;
                    k[n].n = big ? SYNCTAX_BUF : 4096;
                    snprintf(k[n].name, sizeof k[n].name, "%s-%s-%s-%s", api[a], h2d ? "h2d" : "d2h",
                             pin ? "pinned" : "pageable", big ? "64k" : "4k");
                    n++;
                }
    return n;
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 51, calls = argc > 2 ? atoi(argv[2]) : 2000, ndev = 0, nk;
    const char *what = argc > 3 ? argv[3] : "all";
    struct synctax_case k[18];
    double *v;

    nk = synctax_cases(what, k);
    if (batches < 1 || calls < 1 || nk == 0 ||
        (strcmp(what, "all") && strcmp(what, "sync") && strcmp(what, "copy"))) {
        fprintf(stderr, "usage: synctax [BATCHES [CALLS [all|sync|copy]]]\n");
        return 2;
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("synctax: no CUDA device\n");
        return 3;
    }
    v = (double *)malloc((size_t)nk * (size_t)batches * sizeof *v);
    synctax_host[0] = malloc(SYNCTAX_BUF);
    if (!v || !synctax_host[0] || cudaStreamCreate(&synctax_s) != cudaSuccess ||
        cudaMallocHost(&synctax_host[1], SYNCTAX_BUF) != cudaSuccess ||
        cudaMalloc(&synctax_dev, SYNCTAX_BUF) != cudaSuccess) {
        fprintf(stderr, "synctax: set-up failed\n");
        return 2;
    }
    memset(synctax_host[0], 1, SYNCTAX_BUF);
    memset(synctax_host[1], 2, SYNCTAX_BUF);
    SYNCTAX_WARM(synctax_s);
    /* the warm-up: the kernel's completion, the calls' first uses */
    for (int j = 0; j < nk; j++)
        if (synctax_batch(&k[j], synctax_calls(&k[j], calls)) < 0)
            return 1;
    for (int b = 0; b < batches; b++)
        for (int j = 0; j < nk; j++)
            if ((v[j * batches + b] = synctax_batch(&k[j], synctax_calls(&k[j], calls))) < 0)
                return 1;
    for (int j = 0; j < nk; j++) {
        double *x = v + j * batches;

        qsort(x, (size_t)batches, sizeof *x, bench_cmp);
        printf("SYNCTAX %s median_ns=%.1f min_ns=%.1f batches=%d calls=%d\n", k[j].name, x[batches / 2], x[0],
               batches, synctax_calls(&k[j], calls));
    }
    free(v);
    return 0;
}
