/* gpu_integrity.cu - reuse safety under churn.
 *
 * Each thread loops: cudaHostAlloc, fill with a pattern unique to the
 * iteration, then on one stream: spin, async H2D copy, a kernel checking the
 * copy, and a zero-copy kernel that spins and then reads the pinned block
 * directly; then cudaFreeHost at once.  Consecutive iterations request the
 * same size and flags, so a block handed out again before its work is done
 * gets refilled while that work still reads it, and the checks count the
 * words that changed.  0 mismatches = pass.
 *
 * --phase churn      rotate over created blocking, non-blocking and priority
 *                    streams, cudaStreamPerThread, cudaStreamLegacy and 0
 * --phase destroyed  a fresh stream per iteration, destroyed before the free
 *
 * Prints "RESULT integrity ... mismatches=N".  Exit 0 pass, 1 mismatches,
 * 2 CUDA error.  Built twice: default and --default-stream per-thread. */
#include "gpu_common.cuh"

#include <getopt.h>
#include <thread>
#include <vector>

static const size_t sizes[] = {
    4096, 4097, 65533, 100000, 1u << 20, (1u << 20) + 7, 3u * (1u << 20) + 5, 16u << 20,
};
static const unsigned flagsets[] = {
    cudaHostAllocDefault,
    cudaHostAllocMapped,
    cudaHostAllocPortable | cudaHostAllocMapped,
    cudaHostAllocWriteCombined,
};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define NFLAGS (sizeof flagsets / sizeof flagsets[0])
#define MAXSZ ((size_t)16 << 20)
#define DEPTH 6 /* iterations in flight per thread */
#define RUN 4   /* consecutive iterations with the same size and flags */

static int opt_iters = 256, opt_threads = 4, opt_destroyed = 0;
static uint64_t opt_spin_ns = 150000;

__global__ void k_check(const uint32_t *w, size_t n, uint32_t tag, unsigned long long *bad)
{
    size_t nw = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += stride)
        b += w[i] != pat32(tag, i);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const unsigned char *c = (const unsigned char *)w;
        for (size_t i = nw * 4; i < n; i++)
            b += c[i] != (unsigned char)pat32(tag, i);
    }
    if (b)
        atomicAdd(bad, b);
}

/* Reads the pinned block itself (zero-copy), after a spin. */
__global__ void k_zc(const volatile uint32_t *w, size_t n, uint32_t tag, uint64_t spin_ns,
                     unsigned long long *bad)
{
    if (threadIdx.x == 0)
        dev_spin_ns(spin_ns);
    __syncthreads();
    size_t nw = n / 4, stride = (size_t)gridDim.x * blockDim.x;
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nw; i += stride)
        b += w[i] != pat32(tag, i);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const volatile unsigned char *c = (const volatile unsigned char *)w;
        for (size_t i = nw * 4; i < n; i++)
            b += c[i] != (unsigned char)pat32(tag, i);
    }
    if (b)
        atomicAdd(bad, b);
}

static void fill(unsigned char *h, size_t n, uint32_t tag)
{
    uint32_t *w = (uint32_t *)h;
    size_t nw = n / 4;
    for (size_t i = 0; i < nw; i++)
        w[i] = pat32(tag, i);
    for (size_t i = nw * 4; i < n; i++)
        h[i] = (unsigned char)pat32(tag, i);
}

static unsigned check_grid(size_t n)
{
    size_t g = (n / 4 + 255) / 256;
    return g < 1 ? 1 : g > 256 ? 256 : (unsigned)g;
}

/* bad[0]: mismatches seen by the copy check, bad[1]: by the zero-copy read. */
static void worker(int id, unsigned long long *bad)
{
    cudaStream_t own[3];
    int prio_lo, prio_hi;
    CK(cudaStreamCreate(&own[0]));
    CK(cudaStreamCreateWithFlags(&own[1], cudaStreamNonBlocking));
    CK(cudaDeviceGetStreamPriorityRange(&prio_lo, &prio_hi));
    CK(cudaStreamCreateWithPriority(&own[2], cudaStreamNonBlocking, prio_hi));
    /* 0 is the legacy stream, or the per-thread one under --default-stream per-thread */
    cudaStream_t slots[] = {own[0], own[1], cudaStreamPerThread, cudaStreamLegacy, 0, own[2]};
    const int nslots = sizeof slots / sizeof slots[0];

    unsigned char *d[DEPTH];
    cudaEvent_t ev[DEPTH];
    for (int k = 0; k < DEPTH; k++) {
        CK(cudaMalloc(&d[k], MAXSZ));
        CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
    }

    for (int i = 0; i < opt_iters; i++) {
        int k = i % DEPTH; /* d[k] and ev[k] belong to iteration i */
        if (i >= DEPTH)
            CK(cudaEventSynchronize(ev[k]));
        int g = i / RUN;
        size_t n = sizes[g % NSIZES];
        unsigned fl = flagsets[(g / NSIZES) % NFLAGS];
        uint32_t tag = (uint32_t)(id + 1) * 1000003u + (uint32_t)i;

        unsigned char *h = NULL;
        void *hd = NULL;
        CK(cudaHostAlloc((void **)&h, n, fl));
        fill(h, n, tag); /* overwrites whatever the previous owner's work reads */
        __sync_synchronize(); /* drain write-combining buffers before the GPU reads */
        if (fl & cudaHostAllocMapped)
            CK(cudaHostGetDevicePointer(&hd, h, 0));
        else
            hd = h; /* unified addressing: the host pointer works on the device */

        cudaStream_t s;
        if (opt_destroyed) {
            if (i & 1)
                CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
            else
                CK(cudaStreamCreate(&s));
        } else {
            s = slots[(i + id) % nslots];
        }
        k_spin<<<1, 1, 0, s>>>(opt_spin_ns, NULL);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(d[k], h, n, cudaMemcpyHostToDevice, s));
        k_check<<<check_grid(n), 256, 0, s>>>((const uint32_t *)d[k], n, tag, &bad[0]);
        CK(cudaGetLastError());
        k_zc<<<64, 256, 0, s>>>((const volatile uint32_t *)hd, n, tag, opt_spin_ns, &bad[1]);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev[k], s));
        if (opt_destroyed)
            CK(cudaStreamDestroy(s)); /* work still pending on it */
        CK(cudaFreeHost(h));          /* while the kernels above still run */
    }

    for (int k = 0; k < DEPTH; k++) {
        CK(cudaEventSynchronize(ev[k]));
        CK(cudaEventDestroy(ev[k]));
        CK(cudaFree(d[k]));
    }
    for (int j = 0; j < 3; j++)
        CK(cudaStreamDestroy(own[j]));
}

static void usage(void)
{
    fprintf(stderr, "usage: gpu_integrity [--phase churn|destroyed] [--iters N] [--threads N] "
                    "[--spin-us N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"phase", required_argument, 0, 'p'},  {"iters", required_argument, 0, 'i'},
        {"threads", required_argument, 0, 't'}, {"spin-us", required_argument, 0, 's'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (!strcmp(optarg, "destroyed"))
                opt_destroyed = 1;
            else if (strcmp(optarg, "churn"))
                usage();
            break;
        case 'i': opt_iters = atoi(optarg); break;
        case 't': opt_threads = atoi(optarg); break;
        case 's': opt_spin_ns = strtoull(optarg, NULL, 10) * 1000; break;
        default: usage();
        }
    }
    if (opt_iters < 1 || opt_threads < 1 || opt_threads > 64)
        usage();

    CK(cudaFree(0));
    unsigned long long *bad_d, bad[2 * 64] = {0};
    CK(cudaMalloc(&bad_d, sizeof(unsigned long long) * 2 * opt_threads));
    CK(cudaMemset(bad_d, 0, sizeof(unsigned long long) * 2 * opt_threads));
    CK(cudaDeviceSynchronize());

    uint64_t t0 = host_ns();
    std::vector<std::thread> th;
    for (int t = 0; t < opt_threads; t++)
        th.emplace_back(worker, t, bad_d + 2 * t);
    for (auto &t : th)
        t.join();
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(bad, bad_d, sizeof(unsigned long long) * 2 * opt_threads,
                  cudaMemcpyDeviceToHost));

    unsigned long long copy_bad = 0, zc_bad = 0;
    for (int t = 0; t < opt_threads; t++) {
        copy_bad += bad[2 * t];
        zc_bad += bad[2 * t + 1];
        printf("thread %d copy_mismatches=%llu zc_mismatches=%llu\n", t, bad[2 * t], bad[2 * t + 1]);
    }
    printf("RESULT integrity phase=%s threads=%d iters=%d copy_mismatches=%llu "
           "zc_mismatches=%llu mismatches=%llu seconds=%.2f\n",
           opt_destroyed ? "destroyed" : "churn", opt_threads, opt_iters, copy_bad, zc_bad,
           copy_bad + zc_bad, ms_since(t0) / 1000.0);
    CK(cudaFree(bad_d));
    return copy_bad + zc_bad ? 1 : 0;
}
