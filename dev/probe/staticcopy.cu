// staticcopy.cu - which driver entry points a static cudart asks
// cuGetProcAddress for (issue 17).  Build with plain nvcc (static cudart),
// run under libpincache.so with PINCACHE_LOG=debug: every name resolved is
// logged on stderr.  The copies exercise the 1D copy shapes once each.
//   nvcc -O2 -o /tmp/staticcopy dev/probe/staticcopy.cu
//   PINCACHE_LOG=debug LD_PRELOAD=BUILD/src/.libs/libpincache.so /tmp/staticcopy
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

int main()
{
    const size_t n = 4u << 20;
    char *h = (char *)malloc(n), *back = (char *)malloc(n), *pin = nullptr, *d = nullptr, *d2 = nullptr;
    cudaStream_t s;
    memset(h, 7, n);
    if (cudaMalloc(&d, n) || cudaMalloc(&d2, n) || cudaMallocHost(&pin, n) || cudaStreamCreate(&s)) {
        printf("setup failed\n");
        return 1;
    }
    int bad = 0;
    bad |= cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    bad |= cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost);
    bad |= cudaMemcpyAsync(d2, h, n, cudaMemcpyHostToDevice, s);
    bad |= cudaMemcpyAsync(back, d2, n, cudaMemcpyDeviceToHost, s);
    bad |= cudaMemcpy(d2, d, n, cudaMemcpyDeviceToDevice);
    bad |= cudaMemcpy(pin, d, n, cudaMemcpyDefault);
    bad |= cudaMemcpyAsync(d, pin, n, cudaMemcpyHostToDevice, 0);
    bad |= cudaMemcpy2D(d, 1024, h, 1024, 1024, 16, cudaMemcpyHostToDevice);
    bad |= cudaStreamSynchronize(s);
    bad |= cudaDeviceSynchronize();
    printf("copies %s, bytes %s\n", bad ? "FAILED" : "ok", memcmp(h, back, n) ? "differ" : "match");
    return bad != 0;
}
