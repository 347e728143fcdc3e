/* simhit.c - the hit pair (cudaHostAlloc + cudaFreeHost served from the
 * cache) on the simulated runtime, with what pincache's own bookkeeping
 * costs of it: the pair's time minus the time of the calls the fence is
 * made of (cuCtxRecordEvent + cuEventQuery, the sim's own, which pincache
 * does not interpose), both timed in the same process, in alternating
 * batches so that both see the same machine.  The CPU twin of
 * tests/bench/hitpath.cu + callcost.cu (issue 19, item 4).
 *
 *   simhit [--pairs N] [--batch K] [--size BYTES] [--streams S]
 *     prints "RESULT simhit ... pair_ns=P fence_ns=F bookkeeping_ns=P-F
 *     ratio=(P-F)/F", medians over batches of K, and the other calls a
 *     pair makes on the sim, each timed alone (getdev_ns: cudaGetDevice,
 *     prio_ns: cuCtxGetStreamPriorityRange, ctxcur_ns: cuCtxGetCurrent).
 *   simhit --calls [--pairs N]  (SIM_CALLS=1): "calls NAME PER_PAIR" for
 *     each entry point the pairs reached, then "total PER_PAIR".
 *   simhit --pairs-only [--pairs N]: hit pairs and nothing else timed
 *     (under perf, say), then the same RESULT line with pair_ns only.
 *
 * Run it under LD_PRELOAD=libpincache.so (tests/bench/simhit.sh); plainly,
 * every pair is a real allocation and free. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda.h>
#include "../doubles/sim.h"
#include "benchlib.h"

typedef CUresult (*ctx_record_fn)(CUcontext, CUevent);
typedef CUresult (*ctx_current_fn)(CUcontext *);
typedef CUresult (*ev_query_fn)(CUevent);
typedef CUresult (*prio_fn)(int *, int *);

static void *entry(const char *name, unsigned ver)
{
    enum cudaDriverEntryPointQueryResult st;
    void *fn = NULL;

    if (cudaGetDriverEntryPointByVersion(name, &fn, ver, cudaEnableDefault, &st) != cudaSuccess ||
        st != cudaDriverEntryPointSuccess)
        return NULL;
    return fn;
}

static int pair(void **p, size_t size)
{
    return cudaHostAlloc(p, size, 0) != cudaSuccess || cudaFreeHost(*p) != cudaSuccess;
}

/* --calls: the entry points N pairs reach, per pair. */
static int count_calls(long pairs, size_t size)
{
    static struct bench_calls before;
    void *p;

    bench_calls_snap(&before);
    for (long i = 0; i < pairs; i++)
        if (pair(&p, size))
            return 1;
    return bench_calls_print(&before, pairs, "simhit");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"pairs", required_argument, 0, 'n'}, {"batch", required_argument, 0, 'b'},
        {"size", required_argument, 0, 's'},  {"streams", required_argument, 0, 'S'},
        {"calls", no_argument, 0, 'c'},       {"pairs-only", no_argument, 0, 'o'},
        {0, 0, 0, 0},
    };
    long pairs = 200000, nb;
    int batch = 200, nstreams = 4, calls = 0, only = 0, c, bad = 0;
    size_t size = 65536;
    cudaStream_t st[64];
    cudaEvent_t ev;
    CUcontext ctx;
    void *p;

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n': pairs = atol(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 's': size = strtoull(optarg, NULL, 10); break;
        case 'S': nstreams = atoi(optarg); break;
        case 'c': calls = 1; break;
        case 'o': only = 1; break;
        default:
            fprintf(stderr, "usage: simhit [--pairs N] [--batch K] [--size BYTES] [--streams S] [--calls | --pairs-only]\n");
            return 2;
        }
    }
    if (batch < 1 || pairs < batch || nstreams < 0 || nstreams > 64 || size == 0)
        return 2;

    ctx_record_fn record = (ctx_record_fn)entry("cuCtxRecordEvent", 12050);
    ctx_current_fn current = (ctx_current_fn)entry("cuCtxGetCurrent", 4000);
    ev_query_fn query = (ev_query_fn)entry("cuEventQuery", 2000);
    prio_fn prio = (prio_fn)entry("cuCtxGetStreamPriorityRange", 5050);
    if (!record || !current || !query || !prio || cudaFree(0) != cudaSuccess ||
        cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) != cudaSuccess || current(&ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "simhit: setup failed\n");
        return 1;
    }
    for (int i = 0; i < nstreams; i++)
        if (cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking) != cudaSuccess)
            return 1;
    for (int i = 0; i < 1000; i++)      /* warm-up: the block, the fences' events */
        if (pair(&p, size))
            return 1;
    if (calls)
        return count_calls(pairs, size);

    nb = pairs / batch;
    double *vp = calloc((size_t)nb, sizeof *vp), *vf = calloc((size_t)nb, sizeof *vf);
    double *vg = calloc((size_t)nb, sizeof *vg), *vr = calloc((size_t)nb, sizeof *vr);
    double *vc = calloc((size_t)nb, sizeof *vc), *vk = calloc((size_t)nb, sizeof *vk);
    if (!vp || !vf || !vg || !vr || !vc || !vk)
        return 1;
    for (long j = 0; j < nb; j++) {
        uint64_t t0 = bench_ns();
        for (int k = 0; k < batch; k++)
            bad |= pair(&p, size);
        uint64_t t1 = bench_ns();
        vp[j] = (double)(t1 - t0) / batch;
        if (only)
            continue;
        for (int k = 0; k < batch; k++) {
            bad |= record(ctx, (CUevent)ev) != CUDA_SUCCESS;
            bad |= query((CUevent)ev) != CUDA_SUCCESS;
        }
        uint64_t t2 = bench_ns();
        for (int k = 0; k < batch; k++) {
            int d;
            bad |= cudaGetDevice(&d) != cudaSuccess;
        }
        uint64_t t3 = bench_ns();
        for (int k = 0; k < batch; k++) {
            int lo, hi;
            bad |= prio(&lo, &hi) != CUDA_SUCCESS;
        }
        uint64_t t4 = bench_ns();
        for (int k = 0; k < batch; k++)
            bad |= current(&ctx) != CUDA_SUCCESS;
        uint64_t t5 = bench_ns();
        for (int k = 0; k < batch; k++)
            (void)bench_ns();
        uint64_t t6 = bench_ns();
        vf[j] = (double)(t2 - t1) / batch;
        vg[j] = (double)(t3 - t2) / batch;
        vr[j] = (double)(t4 - t3) / batch;
        vc[j] = (double)(t5 - t4) / batch;
        vk[j] = (double)(t6 - t5) / batch;
    }
    if (bad) {
        fprintf(stderr, "simhit: a call failed\n");
    } else if (only) {
        printf("RESULT simhit pairs=%ld batch=%d size=%zu streams=%d pair_ns=%.1f\n", nb * batch, batch, size,
               nstreams, bench_median(vp, nb));
    } else {
        double mp = bench_median(vp, nb), mf = bench_median(vf, nb);
        printf("RESULT simhit pairs=%ld batch=%d size=%zu streams=%d pair_ns=%.1f fence_ns=%.1f "
               "bookkeeping_ns=%.1f ratio=%.3f getdev_ns=%.1f prio_ns=%.1f ctxcur_ns=%.1f clock_ns=%.1f\n",
               nb * batch, batch, size, nstreams, mp, mf, mp - mf, mf > 0 ? (mp - mf) / mf : 0.0,
               bench_median(vg, nb), bench_median(vr, nb), bench_median(vc, nb), bench_median(vk, nb));
    }
    for (int i = 0; i < nstreams; i++)
        cudaStreamDestroy(st[i]);
    free(vp), free(vf), free(vg), free(vr), free(vc), free(vk);
    return bad;
}
