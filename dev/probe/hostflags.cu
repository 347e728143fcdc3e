/* hostflags.cu - after a kernel's __trap(), which blocks does cudaHostGetFlags
 * answer with the sticky error?  Not a test: one line per call.
 *   hostflags ORDER [OPTS]   ORDER: a string of block letters, e.g. "ZMPH" or "MZ";
 * OPTS letters: a: cudaGetDevice and cudaPointerGetAttributes(block) before
 * each cudaHostGetFlags; f: an extra 64 KiB block cudaFreeHost'd before the
 * fault; d: a cudaMalloc before the fault; s: cudaDeviceSynchronize first
 * after the sleep (it returns the sticky error).
 * Z: cudaHostAlloc(flags 0), M: Mapped, P: Portable, W: WriteCombined,
 * H: cudaMallocHost, R: malloc + cudaHostRegister(0).  Every block is 1 MiB.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared -o hostflags hostflags.cu */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__global__ void k_trap(void)
{
    __trap();
}

static void *block(char c)
{
    void *p = NULL;
    cudaError_t e = cudaSuccess;

    switch (c) {
    case 'Z': e = cudaHostAlloc(&p, 1 << 20, 0); break;
    case 'M': e = cudaHostAlloc(&p, 1 << 20, cudaHostAllocMapped); break;
    case 'P': e = cudaHostAlloc(&p, 1 << 20, cudaHostAllocPortable); break;
    case 'W': e = cudaHostAlloc(&p, 1 << 20, cudaHostAllocWriteCombined); break;
    case 'H': e = cudaMallocHost(&p, 1 << 20); break;
    case 'R': p = aligned_alloc(4096, 1 << 20); e = cudaHostRegister(p, 1 << 20, 0); break;
    }
    if (e != cudaSuccess)
        printf("alloc %c: %d\n", c, (int)e);
    return p;
}

int main(int argc, char **argv)
{
    const char *order = argc > 1 ? argv[1] : "ZMPWHR";
    const char *opts = argc > 2 ? argv[2] : "";
    int attr = strchr(opts, 'a') != NULL;
    void *x = NULL;
    void *p[16];
    size_t n = strlen(order) < 16 ? strlen(order) : 16;

    for (size_t i = 0; i < n; i++)
        p[i] = block(order[i]);
    if (strchr(opts, 'd'))
        printf("cudaMalloc rc=%d\n", (int)cudaMalloc(&x, 4096));
    if (strchr(opts, 'f')) {
        x = block('Z');
        printf("cudaFreeHost(extra) rc=%d\n", (int)cudaFreeHost(x));
    }
    cudaDeviceSynchronize();
    k_trap<<<1, 1>>>();
    usleep(500000);
    if (strchr(opts, 's'))
        printf("cudaDeviceSynchronize rc=%d\n", (int)cudaDeviceSynchronize());
    for (size_t i = 0; i < n; i++) {
        unsigned f = 0;
        int d = -1, ea = -1, eb = -1;
        struct cudaPointerAttributes a;
        if (attr) {
            ea = (int)cudaGetDevice(&d);
            eb = (int)cudaPointerGetAttributes(&a, p[i]);
        }
        cudaError_t e = cudaHostGetFlags(&f, p[i]);
        printf("order=%s opts=%s block=%c getdevice=%d attrs=%d cudaHostGetFlags rc=%d flags=0x%x\n", order,
               opts, order[i], ea, eb, (int)e, f);
    }
    return 0;
}
