/* gpu_probe.cu - is there a usable CUDA device, and does this binary's
 * architecture run on it?  Exit 0: yes; 3: no device; 4: kernel does not run
 * (rebuild for another arch). */
#include "gpu_common.cuh"

__global__ void k_probe(int *out) { *out = 42; }

int main(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("devices=0 err=%d (%s)\n", (int)e, cudaGetErrorString(e));
        return 3;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess)
        return 3;
    int *d = NULL, h = 0;
    if (cudaMalloc(&d, sizeof *d) != cudaSuccess)
        return 3;
    k_probe<<<1, 1>>>(d);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    printf("devices=%d name=%s cc=%d.%d kernel=%s\n", n, p.name, p.major,
           p.minor, e == cudaSuccess && h == 42 ? "ok" : cudaGetErrorString(e));
    return e == cudaSuccess && h == 42 ? 0 : 4;
}
