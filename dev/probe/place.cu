// place.cu - does a 1 MiB cudaHostAlloc block copy at the same rate wherever
// the driver carves it in its 2 MiB chunks?  (The cold section's device-timed
// 1 MiB D2H read 0.956-0.970 under pincache on H100s, runs 76, 79, 88: a
// real cudaHostAlloc block in both runs.)  Plainly, with blocks of the given
// sizes (KiB) allocated and held first, as a cache holds freed ones: the
// block's offset in its 2 MiB chunk and its device-timed rates (median of 15
// batches of 20 async copies, GB/s).  docs/runs.md, run 91.
//   nvcc -O2 -arch=sm_90 -o /tmp/place dev/probe/place.cu
//   /tmp/place; /tmp/place 64; /tmp/place 256; /tmp/place 64 256
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include <vector>

static float rate(void *h, void *d, size_t n, int d2h)
{
    cudaEvent_t a, b;
    std::vector<float> v;

    cudaEventCreate(&a);
    cudaEventCreate(&b);
    for (int i = 0; i < 15; i++) {
        float ms;

        cudaEventRecord(a);
        for (int k = 0; k < 20; k++)
            if (d2h)
                cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost);
            else
                cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice);
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms, a, b);
        v.push_back(20.0f * n / (ms * 1e6f));
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    int nhold = argc - 1 < 8 ? argc - 1 : 8;
    void *hold[8], *d, *h;

    cudaMalloc(&d, 1 << 20);
    for (int i = 0; i < nhold; i++)
        cudaHostAlloc(&hold[i], (size_t)atoi(argv[i + 1]) << 10, 0);
    cudaHostAlloc(&h, 1 << 20, 0);
    printf("hold");
    for (int i = 0; i < nhold; i++)
        printf(" %sK", argv[i + 1]);
    printf(": 1M block at %#lx (mod 2M %luK) d2h %.2f h2d %.2f\n", (unsigned long)h,
           ((unsigned long)h % (2ul << 20)) >> 10, rate(h, d, 1 << 20, 1), rate(h, d, 1 << 20, 0));
    return 0;
}
