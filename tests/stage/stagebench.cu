// stagebench - pageable and pinned copy bandwidth, H2D and D2H, at 64 KB,
// 1 MB, 16 MB, 256 MB and 1 GB.  Run plain for the driver's pageable and the
// pinned columns, and under pincache for the staged column
// (tests/stage/run-gpu.sh puts them side by side).
//
//   stagebench [pageable|pinned|both]
//
// The copy is what PyTorch does for a blocking copy: cudaMemcpyAsync on a
// stream, then cudaStreamSynchronize.  One line per measurement:
//   RESULT mode=pageable dir=H2D bytes=N gbps=X cpu_s_per_gb=Y reps=R
// gbps is the median over the repetitions; cpu_s_per_gb is the process's
// user+sys time (getrusage: every thread, copy threads included) per GB.
//
// Build: nvcc -O2 -cudart shared -arch=sm_90 -o stagebench stagebench.cu
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            fprintf(stderr, "%s:%d: %s: %d (%s)\n", __FILE__, __LINE__, #call, (int)e_, \
                    cudaGetErrorString(e_));                                            \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void measure(const char *mode, int h2d, unsigned char *host, unsigned char *dev, size_t n,
                    cudaStream_t s)
{
    double t[256], c0, c1, med;
    int reps = n <= (64u << 10) ? 200 : n <= (1u << 20) ? 100 : n <= (16u << 20) ? 20 : n <= (256u << 20) ? 6 : 3;
    cudaMemcpyKind k = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;

    for (int w = 0; w < 2; w++) {           // warm-up: first-touch, ring allocation, threads
        CK(cudaMemcpyAsync(h2d ? (void *)dev : (void *)host, h2d ? (void *)host : (void *)dev, n, k, s));
        CK(cudaStreamSynchronize(s));
    }
    c0 = cpu_s();
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        CK(cudaMemcpyAsync(h2d ? (void *)dev : (void *)host, h2d ? (void *)host : (void *)dev, n, k, s));
        CK(cudaStreamSynchronize(s));
        t[r] = now_s() - t0;
    }
    c1 = cpu_s();
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    med = t[reps / 2];
    printf("RESULT mode=%s dir=%s bytes=%zu gbps=%.2f cpu_s_per_gb=%.4f reps=%d\n", mode, h2d ? "H2D" : "D2H",
           n, (double)n / med / 1e9, (c1 - c0) / ((double)n * reps / 1e9), reps);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 64u << 10, 1u << 20, 16u << 20, 256u << 20, 1u << 30 };
    const char *which = argc > 1 ? argv[1] : "both";
    int do_pageable = strcmp(which, "pinned") != 0, do_pinned = strcmp(which, "pageable") != 0;
    size_t maxn = sizes[sizeof sizes / sizeof sizes[0] - 1];
    unsigned char *pageable = NULL, *pinned = NULL, *dev;
    cudaStream_t s;
    int ndev = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("1..0 # SKIP no CUDA device\n");
        return 0;
    }
    CK(cudaSetDevice(0));
    CK(cudaMalloc((void **)&dev, maxn));
    CK(cudaMemset(dev, 1, maxn));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (do_pageable) {
        pageable = (unsigned char *)malloc(maxn);
        if (!pageable)
            return 2;
        memset(pageable, 2, maxn);           // fault every page in before timing
    }
    if (do_pinned) {
        CK(cudaHostAlloc((void **)&pinned, maxn, 0));
        memset(pinned, 3, maxn);
    }
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int h2d = 1; h2d >= 0; h2d--) {
            if (do_pageable)
                measure("pageable", h2d, pageable, dev, sizes[i], s);
            if (do_pinned)
                measure("pinned", h2d, pinned, dev, sizes[i], s);
        }
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    if (pinned)
        CK(cudaFreeHost(pinned));
    free(pageable);
    return 0;
}
