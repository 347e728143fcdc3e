/* churn_sim - the churn demo on the simulated device (no GPU needed).
 *
 * The same per-batch loop as tests/bench/churn.cu: cudaHostAlloc, fill,
 * async H2D, a "kernel", cudaFreeHost; or the hand-optimized variant that
 * keeps two pinned buffers and an event each.  The simulated device's costs
 * are set by scripts/demo.sh from the H200 measurements (DESIGN.md).
 * Usage: churn_sim churn|twobuf SIZE_MB BATCHES KERNEL_US */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "sim.h"

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, (int)e_); return 1; } } while (0)

static void consume(void *arg) { (void)arg; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: churn_sim churn|twobuf SIZE_MB BATCHES KERNEL_US\n");
        return 2;
    }
    int twobuf = strcmp(argv[1], "twobuf") == 0;
    size_t size = (size_t)atoi(argv[2]) << 20;
    int batches = atoi(argv[3]);
    unsigned kernel_us = (unsigned)atoi(argv[4]);
    cudaStream_t s;
    void *dev, *buf[2] = { NULL, NULL };
    cudaEvent_t done[2];
    double t0;

    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&dev, size));
    if (twobuf) {
        for (int i = 0; i < 2; i++) {
            CHECK(cudaHostAlloc(&buf[i], size, 0));
            CHECK(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming));
            CHECK(cudaEventRecord(done[i], s));
        }
    }
    t0 = now_ms();
    for (int b = 0; b < batches; b++) {
        void *p;
        if (twobuf) {
            p = buf[b & 1];
            CHECK(cudaEventSynchronize(done[b & 1]));
        } else {
            CHECK(cudaHostAlloc(&p, size, 0));
        }
        memset(p, b, size);
        CHECK(cudaMemcpyAsync(dev, p, size, cudaMemcpyHostToDevice, s));
        CHECK(simLaunch(s, consume, NULL, kernel_us));
        if (twobuf)
            CHECK(cudaEventRecord(done[b & 1], s));
        else
            CHECK(cudaFreeHost(p));
    }
    CHECK(cudaStreamSynchronize(s));
    printf("%s %zu MB: %.3f ms/batch\n", argv[1], size >> 20, (now_ms() - t0) / batches);
    return 0;
}
