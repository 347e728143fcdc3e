/* simstage.c - what pincache itself costs of one staged pageable copy, on
 * the simulated runtime (issue 19, item 5: "pageable as fast as pinned").
 * The copy is PyTorch's blocking .cuda() of a pageable row (cudaMemcpyAsync
 * H2D on the legacy stream, then cudaStreamSynchronize), or with --d2h its
 * .cpu() (the same, D2H).
 *
 *   simstage [--size BYTES] [--copies N] [--batch K] [--d2h]
 *     under LD_PRELOAD=libpincache.so: batches of K staged copies,
 *     alternating with batches of the same bytes moved by hand through the
 *     sim's own calls (looked up in libcudart.so.13, so that no shim sees
 *     them): piece by piece through a pinned buffer, the pieces cut as
 *     staging cuts them, each piece's DMA queued as soon as it is filled
 *     (H2D), or every DMA queued, an event after each, and each piece
 *     copied out once its event is done (D2H): the least a pipelined copy
 *     through pinned memory asks of the runtime.  Prints, per copy, the
 *     medians over the batches of the staged copy, the reference and their
 *     difference (pincache's overhead), in wall time and in the calling
 *     thread's CPU time:
 *       RESULT simstage dir=h2d size=S pieces=P copies=N staged_ns= ref_ns=
 *         overhead_ns= staged_cpu_ns= ref_cpu_ns= overhead_cpu_ns=
 *     Run it with SIM_COPY_GBPS=0 (the sim's DMA then costs its memcpy and
 *     no sleep) and PINCACHE_STAGE_THREADS=1 (the caller fills every piece,
 *     as the reference does), so that what is left is pincache's own work:
 *     its calls, its bookkeeping, its hand-offs (tests/bench/simstage.sh).
 *   --sync: the copy is a cudaMemcpy instead (the reference still ends
 *     with a stream sync).
 *   --nosync: no stream sync after each cudaMemcpyAsync (PyTorch's
 *     non-blocking .cuda()); one after the last, with --calls.
 *   simstage --calls [--size BYTES] [--copies N] [--d2h] [--sync|--nosync]  (SIM_CALLS=1):
 *     after a warm-up that goes twice round the staging ring, the calls N
 *     staged copies reach the sim, per copy: "calls NAME PER_COPY", then
 *     "total PER_COPY" (tests/stage/stagecalls.sh). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <getopt.h>
#include "../doubles/sim.h"
#include "benchlib.h"

#define MAXP 64

typedef cudaError_t (*async_fn)(void *, const void *, size_t, enum cudaMemcpyKind, cudaStream_t);
typedef cudaError_t (*sync_fn)(cudaStream_t);
typedef cudaError_t (*halloc_fn)(void **, size_t, unsigned int);
typedef cudaError_t (*record_fn)(cudaEvent_t, cudaStream_t);
typedef cudaError_t (*evsync_fn)(cudaEvent_t);

static struct {
    async_fn async;
    sync_fn sync;
    record_fn record;
    evsync_fn evsync;
} sim;

static size_t off[MAXP + 1];
static int npieces;

/* Staging's cut with its defaults (stage/pipeline.c pc_piece_size,
 * stage_threads.c pc_xfer_count): about 4 pieces of at least 256 KiB, whole
 * 64 KiBs, at most a 4 MiB chunk; a last piece of 512 KiB or more halved. */
static void cut(size_t n)
{
    size_t piece = ((n / 4) + 65535) & ~(size_t)65535, last;

    if (piece < (256u << 10))
        piece = 256u << 10;
    if (piece > (4u << 20))
        piece = 4u << 20;
    for (npieces = 0; (size_t)npieces * piece < n && npieces < MAXP - 1; npieces++)
        off[npieces] = (size_t)npieces * piece;
    last = n - off[npieces - 1];
    if (last >= (512u << 10)) {
        off[npieces] = off[npieces - 1] + (((last / 2) + 4095) & ~(size_t)4095);
        npieces++;
    }
    off[npieces] = n;
}

static int sync_copy;                /* --sync: cudaMemcpy, and no stream sync */
static int no_sync;                  /* --nosync: no stream sync after each async copy */

static int staged(int d2h, char *host, char *dev, size_t n)
{
    cudaError_t e;

    if (sync_copy)
        return (d2h ? cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost)
                    : cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice)) != cudaSuccess;
    e = d2h ? cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, 0)
            : cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0);
    return e != cudaSuccess || (!no_sync && cudaStreamSynchronize(0) != cudaSuccess);
}

static int by_hand(int d2h, char *host, char *dev, char *pin, cudaEvent_t *ev)
{
    int bad = 0;

    for (int k = 0; k < npieces; k++) {
        size_t a = off[k], len = off[k + 1] - a;

        if (d2h) {
            bad |= sim.async(pin + a, dev + a, len, cudaMemcpyDeviceToHost, 0) != cudaSuccess;
            bad |= sim.record(ev[k], 0) != cudaSuccess;
        } else {
            memcpy(pin + a, host + a, len);
            bad |= sim.async(dev + a, pin + a, len, cudaMemcpyHostToDevice, 0) != cudaSuccess;
        }
    }
    for (int k = 0; d2h && k < npieces; k++) {
        bad |= sim.evsync(ev[k]) != cudaSuccess;
        memcpy(host + off[k], pin + off[k], off[k + 1] - off[k]);
    }
    return bad | (sim.sync(0) != cudaSuccess);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"size", required_argument, 0, 's'}, {"copies", required_argument, 0, 'n'},
        {"batch", required_argument, 0, 'b'}, {"d2h", no_argument, 0, 'd'},
        {"calls", no_argument, 0, 'c'},      {"sync", no_argument, 0, 'y'},
        {"nosync", no_argument, 0, 'a'},     {0, 0, 0, 0},
    };
    size_t n = (size_t)5 << 19;          /* 2.5 MiB: PyTorch's row in issue 19 */
    long copies = 1000, nb;
    int batch = 20, d2h = 0, calls = 0, c, bad = 0;
    char *host, *dev = NULL, *pin = NULL;
    cudaEvent_t ev[MAXP];
    halloc_fn halloc;
    void *rt;

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 's': n = strtoull(optarg, NULL, 10); break;
        case 'n': copies = atol(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'd': d2h = 1; break;
        case 'c': calls = 1; break;
        case 'y': sync_copy = 1; break;
        case 'a': no_sync = 1; break;
        default:
            fprintf(stderr, "usage: simstage [--size BYTES] [--copies N] [--batch K] [--d2h] [--sync] [--nosync] [--calls]\n");
            return 2;
        }
    }
    if (batch < 1 || copies < batch || n < 1)
        return 2;
    cut(n);
    rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    sim.async = rt ? (async_fn)dlsym(rt, "cudaMemcpyAsync") : NULL;
    sim.sync = rt ? (sync_fn)dlsym(rt, "cudaStreamSynchronize") : NULL;
    sim.record = rt ? (record_fn)dlsym(rt, "cudaEventRecord") : NULL;
    sim.evsync = rt ? (evsync_fn)dlsym(rt, "cudaEventSynchronize") : NULL;
    halloc = rt ? (halloc_fn)dlsym(rt, "cudaHostAlloc") : NULL;
    host = malloc(n);
    if (!sim.async || !sim.sync || !sim.record || !sim.evsync || !halloc || !host ||
        cudaMalloc((void **)&dev, n) != cudaSuccess || halloc((void **)&pin, n, 0) != cudaSuccess) {
        fprintf(stderr, "simstage: set-up failed\n");
        return 1;
    }
    for (int k = 0; k < npieces; k++)
        if (cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming) != cudaSuccess)
            return 1;
    memset(host, 7, n);
    memset(pin, 7, n);
    /* the warm-up: the ring made, then gone round twice; the threads started */
    for (int i = 0; i < 64; i++)
        bad |= staged(d2h, host, dev, n) | by_hand(d2h, host, dev, pin, ev);
    if (bad) {
        fprintf(stderr, "simstage: a copy failed in the warm-up\n");
        return 1;
    }
    if (calls) {
        static struct bench_calls before;

        bench_calls_snap(&before);
        for (long i = 0; i < copies; i++)
            bad |= staged(d2h, host, dev, n);
        if (no_sync)
            bad |= cudaStreamSynchronize(0) != cudaSuccess;
        return bad || bench_calls_print(&before, copies, "simstage");
    }
    /* Batches of each kind, alternating, each staged batch against the
     * reference batch after it: drifts of the machine cancel in the
     * difference.  Wall time, and the calling thread's CPU time (not the
     * time it is blocked, nor the time the machine's other work takes it
     * off the CPU: the steadier of the two on a shared machine). */
    nb = copies / batch;
    double *v = calloc(6 * (size_t)nb, sizeof *v);
    if (!v)
        return 1;
    for (long j = 0; j < nb; j++) {
        uint64_t t0 = bench_ns(), c0 = bench_cpu_ns();
        for (int k = 0; k < batch; k++)
            bad |= staged(d2h, host, dev, n);
        uint64_t t1 = bench_ns(), c1 = bench_cpu_ns();
        for (int k = 0; k < batch; k++)
            bad |= by_hand(d2h, host, dev, pin, ev);
        uint64_t t2 = bench_ns(), c2 = bench_cpu_ns();
        v[j] = (double)(t1 - t0) / batch;
        v[nb + j] = (double)(t2 - t1) / batch;
        v[2 * nb + j] = v[j] - v[nb + j];
        v[3 * nb + j] = (double)(c1 - c0) / batch;
        v[4 * nb + j] = (double)(c2 - c1) / batch;
        v[5 * nb + j] = v[3 * nb + j] - v[4 * nb + j];
    }
    if (bad) {
        fprintf(stderr, "simstage: a copy failed\n");
    } else {
        double m[6];

        for (int i = 0; i < 6; i++)
            m[i] = bench_median(v + i * nb, nb);
        printf("RESULT simstage dir=%s%s size=%zu pieces=%d copies=%ld staged_ns=%.0f ref_ns=%.0f overhead_ns=%.0f "
               "staged_cpu_ns=%.0f ref_cpu_ns=%.0f overhead_cpu_ns=%.0f\n",
               d2h ? "d2h" : "h2d", sync_copy ? "-sync" : "", n, npieces, nb * batch, m[0], m[1], m[2], m[3], m[4], m[5]);
    }
    free(v);
    return bad;
}
