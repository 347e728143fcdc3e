// bwtest - pageable copy bandwidth measured the way NVIDIA's bandwidthTest
// (cuda-samples) measures it: a malloc'd host buffer, the same synchronous
// cudaMemcpy repeated, the whole loop timed, bytes * repetitions / time.
// Built twice by tests/stage/run-gpu.sh, with nvcc's default static cudart
// and with -cudart shared, and run plain and under pincache: issue 17 asks
// that the static build's staged rates reach 0.9x the shared build's, and
// that its report count every copy.
//
//   bwtest [REPS]      (default 20 per size and direction)
//
// One line per measurement, then the number of copies made:
//   RESULT build=static dir=H2D bytes=N gbps=X reps=R
//   COPIES n=C bytes=B
// The first copy of each size and direction is a warm-up, outside the
// timing but counted in COPIES.  The bytes are checked after each size.
//
// Build: nvcc -O2 -arch=sm_90 -o bwtest-static bwtest.cu
//        nvcc -O2 -arch=sm_90 -cudart shared -o bwtest-shared bwtest.cu
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Static or shared: whether the process has a libcudart.so mapped.
static const char *build_of(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int shared = 0;

    if (!f)
        return "unknown";
    while (fgets(line, sizeof line, f))
        shared |= strstr(line, "libcudart.so") != NULL;
    fclose(f);
    return shared ? "shared" : "static";
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { (size_t)32 << 20, (size_t)256 << 20 };
    int reps = argc > 1 ? atoi(argv[1]) : 20;
    const char *build = build_of();
    unsigned long long copies = 0, bytes = 0;
    int bad = 0;

    if (reps < 1)
        reps = 1;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k];
        unsigned char *h = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
        void *d = NULL;

        if (!h || !back || cudaMalloc(&d, n) != cudaSuccess) {
            fprintf(stderr, "bwtest: no memory for %zu bytes\n", n);
            return 2;
        }
        for (size_t i = 0; i < n; i++)
            h[i] = (unsigned char)(i * 2654435761u >> 13);
        memset(back, 0, n);
        for (int dir = 0; dir < 2; dir++) {
            double t0, t;
            cudaError_t e = dir ? cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost)
                                : cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);   // warm-up
            copies++, bytes += n;
            t0 = now_s();
            for (int r = 0; r < reps && e == cudaSuccess; r++) {
                e = dir ? cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost) : cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
                copies++, bytes += n;
            }
            t = now_s() - t0;
            if (e != cudaSuccess) {
                fprintf(stderr, "bwtest: cudaMemcpy: %d (%s)\n", (int)e, cudaGetErrorString(e));
                return 2;
            }
            printf("RESULT build=%s dir=%s bytes=%zu gbps=%.2f reps=%d\n", build, dir ? "D2H" : "H2D", n,
                   (double)n * reps / t / 1e9, reps);
        }
        if (memcmp(h, back, n) != 0) {
            fprintf(stderr, "bwtest: %zu bytes came back different\n", n);
            bad = 1;
        }
        cudaFree(d);
        free(h);
        free(back);
    }
    printf("COPIES n=%llu bytes=%llu\n", copies, bytes);
    fflush(stdout);
    return bad;
}
