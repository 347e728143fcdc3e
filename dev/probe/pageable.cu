/* pageable.cu - can the devices read pageable memory themselves, and what do
 * the attributes pincache's staging decides on say (issue 17 item 3;
 * src/stage/native.c; the simulated device's SIM_PAGEABLE_ACCESS assumes
 * these answers until this has run).  Not a test: one line per fact.
 *
 *   - per device: cudaDevAttrPageableMemoryAccess,
 *     ...PageableMemoryAccessUsesHostPageTables, ...ConcurrentManagedAccess,
 *     ...DirectManagedMemAccessFromHost, each with its return code, and the
 *     driver's cuDeviceGetAttribute for the first two (through
 *     cudaGetDriverEntryPointByVersion);
 *   - cudaDeviceGetAttribute with a NULL out-pointer and with device 99:
 *     the codes, and the last error each leaves;
 *   - a kernel that reads (sums) a malloc'd buffer, in a forked child made
 *     before the parent touches CUDA: the child's launch and sync codes, the
 *     sum, and how the child ended (exit status or signal);
 *   - where PageableMemoryAccess is 1: a kernel that writes a malloc'd 16
 *     MiB buffer after spinning ~100 ms, then a pageable cudaMemcpyAsync of
 *     that buffer on the same stream: how many bytes the device got from the
 *     kernel (stream order) and how many from before it;
 *   - pageable and pinned H2D/D2H rates at 256 MiB (best of 3).
 *
 * Build: nvcc -O2 -arch=sm_90 -o pageable dev/probe/pageable.cu
 * Run:   ./pageable */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

__global__ void k_sum(const unsigned char *p, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        s += p[i];
    atomicAdd(out, s);
}

__global__ void k_spin_fill(unsigned char *p, size_t n, unsigned char v, long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The child: a kernel sums a malloc'd buffer of 1 MiB of ones. */
static void child_read(void)
{
    size_t n = 1 << 20;
    unsigned char *h = (unsigned char *)malloc(n);
    unsigned long long *d = NULL, sum = 0;
    cudaError_t e1, e2, e3;

    memset(h, 1, n);
    cudaMalloc(&d, sizeof *d);
    cudaMemset(d, 0, sizeof *d);
    k_sum<<<1, 256>>>(h, n, d);
    e1 = cudaGetLastError();
    e2 = cudaDeviceSynchronize();
    e3 = cudaMemcpy(&sum, d, sizeof sum, cudaMemcpyDeviceToHost);
    printf("child kernel reads malloc'd memory: launch %d (%s), sync %d (%s), copy back %d, sum %llu of %zu\n",
           (int)e1, cudaGetErrorName(e1), (int)e2, cudaGetErrorName(e2), (int)e3, sum, n);
    fflush(stdout);
    exit(e2 == cudaSuccess && sum == n ? 0 : 1);
}

static void attr(int dev, enum cudaDeviceAttr a, const char *name)
{
    int v = -1;
    cudaError_t e = cudaDeviceGetAttribute(&v, a, dev);
    printf("device %d %s = %d (return %d, last error %d)\n", dev, name, v, (int)e, (int)cudaGetLastError());
}

typedef int (*drv_attr_t)(int *, int, int);

static void order(int dev)
{
    size_t n = (size_t)16 << 20, from_kernel = 0, old = 0;
    unsigned char *h = (unsigned char *)malloc(n), *d = NULL, *back = (unsigned char *)malloc(n);
    cudaStream_t s;
    cudaError_t e;
    int clk = 0;

    cudaSetDevice(dev);
    cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, dev);   /* kHz */
    memset(h, 'O', n);
    cudaMalloc(&d, n);
    cudaMemset(d, 0, n);
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaDeviceSynchronize();
    k_spin_fill<<<256, 256, 0, s>>>(h, n, 'K', (long long)clk * 100);   /* ~100 ms */
    double t0 = now_s();
    e = cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);
    double t1 = now_s();
    cudaStreamSynchronize(s);
    cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; i++) {
        from_kernel += back[i] == 'K';
        old += back[i] == 'O';
    }
    printf("device %d order: kernel writes 16 MiB of malloc'd memory (~100 ms), then a pageable cudaMemcpyAsync of it "
           "on the same stream: return %d after %.1f ms; %zu bytes from the kernel, %zu from before it\n",
           dev, (int)e, (t1 - t0) * 1e3, from_kernel, old);
    cudaStreamDestroy(s);
    cudaFree(d);
    free(h);
    free(back);
}

static void rates(int dev)
{
    size_t n = (size_t)256 << 20;
    unsigned char *pg = (unsigned char *)malloc(n), *pin = NULL, *d = NULL;
    double best[4] = { 1e9, 1e9, 1e9, 1e9 };
    const char *what[4] = { "pageable H2D", "pageable D2H", "pinned H2D", "pinned D2H" };

    cudaSetDevice(dev);
    memset(pg, 3, n);
    cudaHostAlloc((void **)&pin, n, 0);
    cudaMalloc(&d, n);
    for (int r = 0; r < 3; r++) {
        for (int k = 0; k < 4; k++) {
            unsigned char *hst = k < 2 ? pg : pin;
            double t0 = now_s();
            if (k % 2 == 0)
                cudaMemcpy(d, hst, n, cudaMemcpyHostToDevice);
            else
                cudaMemcpy(hst, d, n, cudaMemcpyDeviceToHost);
            double t = now_s() - t0;
            if (t < best[k])
                best[k] = t;
        }
    }
    for (int k = 0; k < 4; k++)
        printf("device %d %s 256 MiB: %.1f GB/s (best of 3)\n", dev, what[k], n / best[k] / 1e9);
    cudaFree(d);
    cudaFreeHost(pin);
    free(pg);
}

int main(void)
{
    int ndev = 0, st = 0;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0)
        child_read();
    waitpid(pid, &st, 0);
    if (WIFEXITED(st))
        printf("child ended: exit status %d\n", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("child ended: signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));

    cudaGetDeviceCount(&ndev);
    printf("devices: %d\n", ndev);
    for (int dev = 0; dev < ndev; dev++) {
        drv_attr_t drv = NULL;
        enum cudaDriverEntryPointQueryResult q;
        attr(dev, cudaDevAttrPageableMemoryAccess, "PageableMemoryAccess");
        attr(dev, cudaDevAttrPageableMemoryAccessUsesHostPageTables, "PageableMemoryAccessUsesHostPageTables");
        attr(dev, cudaDevAttrConcurrentManagedAccess, "ConcurrentManagedAccess");
        attr(dev, cudaDevAttrDirectManagedMemAccessFromHost, "DirectManagedMemAccessFromHost");
        if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", (void **)&drv, 2000, cudaEnableDefault, &q) ==
                cudaSuccess && drv) {
            int a = -1, b = -1;
            int ra = drv(&a, (int)cudaDevAttrPageableMemoryAccess, dev);
            int rb = drv(&b, (int)cudaDevAttrPageableMemoryAccessUsesHostPageTables, dev);
            printf("device %d driver cuDeviceGetAttribute: PageableMemoryAccess %d (return %d), "
                   "UsesHostPageTables %d (return %d)\n", dev, a, ra, b, rb);
        } else {
            printf("device %d driver cuDeviceGetAttribute: not found\n", dev);
        }
    }
    {
        int v = -1;
        cudaError_t e = cudaDeviceGetAttribute(NULL, cudaDevAttrPageableMemoryAccess, 0);
        printf("cudaDeviceGetAttribute(NULL, PageableMemoryAccess, 0): return %d, last error %d\n", (int)e,
               (int)cudaGetLastError());
        e = cudaDeviceGetAttribute(&v, cudaDevAttrPageableMemoryAccess, 99);
        printf("cudaDeviceGetAttribute(&v, PageableMemoryAccess, 99): return %d, value %d, last error %d\n", (int)e,
               v, (int)cudaGetLastError());
    }
    for (int dev = 0; dev < ndev; dev++) {
        int pma = 0;
        cudaDeviceGetAttribute(&pma, cudaDevAttrPageableMemoryAccess, dev);
        if (pma)
            order(dev);
        else
            printf("device %d order: not run (PageableMemoryAccess 0: kernels cannot touch malloc'd memory)\n", dev);
        rates(dev);
    }
    return 0;
}
