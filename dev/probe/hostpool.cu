/* hostpool.cu - what the H200 does with host memory pools and host VMM, for
 * the simulated device's "assumed, to be measured" rows (tests/doubles/
 * README.md: Memory pools, and the simulated driver's pools and VMM).  Not a
 * test: one plain text line per fact, "name: value".
 * Build: nvcc -O2 -arch=sm_90 -cudart shared -o hostpool dev/probe/hostpool.cu -lcuda
 * Run:   ./hostpool */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

__global__ void k_sum(const unsigned char *p, size_t n, unsigned long long *out)
{
    unsigned long long s = 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        s += p[i];
    atomicAdd(out, s);
}

/* Can a kernel read p (n bytes of 1)?  The sum it saw, or the error. */
static void kernel_reads(const char *what, void *p, size_t n)
{
    unsigned long long *out = NULL, got = 0;
    cudaError_t e = cudaMallocManaged(&out, sizeof *out);
    if (e == cudaSuccess) {
        *out = 0;
        k_sum<<<1, 256>>>((const unsigned char *)p, n, out);
        e = cudaDeviceSynchronize();
        got = *out;
        cudaFree(out);
    }
    printf("%s kernel read: err %d sum %llu (want %zu)\n", what, (int)e, got, n);
    cudaGetLastError();
}

static void describe(const char *what, void *p, size_t n)
{
    struct cudaPointerAttributes a;
    unsigned int fl = 0;
    void *d = NULL;
    cudaError_t e;

    memset(&a, 0, sizeof a);
    e = cudaPointerGetAttributes(&a, p);
    printf("%s attributes: err %d type %d device %d hostPointer %s devicePointer %s\n", what, (int)e, (int)a.type,
           a.device, a.hostPointer == p ? "same" : a.hostPointer ? "other" : "null",
           a.devicePointer == p ? "same" : a.devicePointer ? "other" : "null");
    e = cudaHostGetFlags(&fl, p);
    printf("%s cudaHostGetFlags: err %d flags %u; last error %d\n", what, (int)e, fl, (int)cudaGetLastError());
    e = cudaHostGetDevicePointer(&d, p, 0);
    printf("%s cudaHostGetDevicePointer: err %d %s; last error %d\n", what, (int)e,
           d == p ? "same" : d ? "other" : "null", (int)cudaGetLastError());
    e = cudaFreeHost(p);
    printf("%s cudaFreeHost: err %d; last error %d\n", what, (int)e, (int)cudaGetLastError());
    memset(p, 1, n);
    kernel_reads(what, p, n);
}

static cudaMemPool_t make_pool(cudaMemLocationType t, int id, int handles, cudaError_t *e)
{
    cudaMemPoolProps pp;
    cudaMemPool_t p = NULL;
    memset(&pp, 0, sizeof pp);
    pp.allocType = cudaMemAllocationTypePinned;
    pp.handleTypes = (cudaMemAllocationHandleType)handles;
    pp.location.type = t;
    pp.location.id = id;
    *e = cudaMemPoolCreate(&p, &pp);
    cudaGetLastError();
    return p;
}

static void pools(void)
{
    cudaError_t e;
    cudaMemPool_t hp, cur = NULL, def = NULL;
    cudaMemLocation hl = { cudaMemLocationTypeHost, 0 };
    void *a = NULL, *b = NULL, *m = NULL;
    cudaPointerAttributes at;

    hp = make_pool(cudaMemLocationTypeHost, 0, 0, &e);
    printf("cudaMemPoolCreate host: %d\n", (int)e);
    if (e)
        return;
    {
        /* Without it a kernel's read faults (700, run 48), which breaks
         * the context for everything after. */
        cudaMemAccessDesc ad;
        memset(&ad, 0, sizeof ad);
        ad.location.type = cudaMemLocationTypeDevice;
        ad.location.id = 0;
        ad.flags = cudaMemAccessFlagsProtReadWrite;
        printf("cudaMemPoolSetAccess device 0 read-write: %d\n", (int)cudaMemPoolSetAccess(hp, &ad, 1));
    }
    e = cudaMallocFromPoolAsync(&a, MiB, hp, 0);
    printf("cudaMallocFromPoolAsync 1 MiB: %d\n", (int)e);
    e = cudaMallocFromPoolAsync(&b, 64 * MiB, hp, 0);
    printf("cudaMallocFromPoolAsync 64 MiB: %d\n", (int)e);
    cudaStreamSynchronize(0);
    if (a)
        describe("pool 1 MiB", a, MiB);
    if (b)
        describe("pool 64 MiB", b, 64 * MiB);
    printf("cudaMemGetDefaultMemPool host: %d\n", (int)cudaMemGetDefaultMemPool(&def, &hl, cudaMemAllocationTypePinned));
    printf("cudaMemSetMemPool host: %d\n", (int)cudaMemSetMemPool(&hl, cudaMemAllocationTypePinned, hp));
    printf("cudaMemGetMemPool host is the pool: %d\n",
           cudaMemGetMemPool(&cur, &hl, cudaMemAllocationTypePinned) == cudaSuccess && cur == hp);
    e = cudaDeviceSetMemPool(0, hp);
    printf("cudaDeviceSetMemPool(0, host pool): %d; last error %d\n", (int)e, (int)cudaGetLastError());
    e = cudaMallocAsync(&m, MiB, 0);
    memset(&at, 0, sizeof at);
    cudaPointerGetAttributes(&at, m);
    printf("cudaMallocAsync after host current: %d type %d (1 host, 2 device)\n", (int)e, (int)at.type);
    if (m) {
        CUmemoryPool from = NULL;
        CUresult r = cuPointerGetAttribute(&from, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, (CUdeviceptr)m);
        printf("cudaMallocAsync pool: %d %s\n", (int)r, (void *)from == (void *)hp ? "the host pool" : "another");
        cudaFreeAsync(m, 0);
    }
    if (b)
        printf("cudaFreeAsync 64 MiB: %d\n", (int)cudaFreeAsync(b, 0));
    printf("cudaMemPoolTrimTo(0) with 1 MiB live: %d\n", (int)cudaMemPoolTrimTo(hp, 0));
    printf("cudaMemPoolDestroy with 1 MiB live: %d\n", (int)cudaMemPoolDestroy(hp));
    if (a) {
        memset(a, 1, MiB);
        kernel_reads("pool 1 MiB after destroy", a, MiB);
        printf("cudaFreeAsync after destroy: %d\n", (int)cudaFreeAsync(a, 0));
        cudaGetLastError();
    }
    printf("cudaMemPoolDestroy again: %d\n", (int)cudaMemPoolDestroy(hp));
    cudaGetLastError();
    /* bad arguments the sim models */
    printf("bad cudaMemPoolCreate(NULL, NULL): %d\n", (int)cudaMemPoolCreate(NULL, NULL));
    cudaGetLastError();
    make_pool(cudaMemLocationTypeHost, 0, 1, &e);
    printf("bad cudaMemPoolCreate host with handle type: %d\n", (int)e);
    make_pool(cudaMemLocationTypeHostNumaCurrent, 0, 0, &e);
    printf("bad cudaMemPoolCreate host NUMA current: %d\n", (int)e);
    make_pool(cudaMemLocationTypeDevice, 99, 0, &e);
    printf("bad cudaMemPoolCreate device 99: %d\n", (int)e);
    hp = make_pool(cudaMemLocationTypeHost, 0, 0, &e);
    printf("bad cudaMallocFromPoolAsync(NULL): %d\n", (int)cudaMallocFromPoolAsync(NULL, MiB, hp, 0));
    cudaGetLastError();
    printf("bad cudaMallocFromPoolAsync size 0: %d\n", (int)cudaMallocFromPoolAsync(&a, 0, hp, 0));
    cudaGetLastError();
    cudaMemPoolDestroy(hp);
    printf("bad cudaMallocFromPoolAsync destroyed pool: %d\n", (int)cudaMallocFromPoolAsync(&a, MiB, hp, 0));
    cudaGetLastError();
    printf("bad cudaMemPoolTrimTo destroyed pool: %d\n", (int)cudaMemPoolTrimTo(hp, 0));
    cudaGetLastError();
    printf("bad cudaMemPoolDestroy(default host pool): %d\n", (int)cudaMemPoolDestroy(def));
    cudaGetLastError();
    /* after a device reset: does a host pool allocation survive? */
    hp = make_pool(cudaMemLocationTypeHost, 0, 0, &e);
    a = NULL;
    cudaMallocFromPoolAsync(&a, MiB, hp, 0);
    cudaDeviceSynchronize();
    printf("cudaDeviceReset: %d\n", (int)cudaDeviceReset());
    memset(&at, 0, sizeof at);
    e = cudaPointerGetAttributes(&at, a);
    printf("pool allocation after reset: attributes err %d type %d; cudaFreeAsync %d\n", (int)e, (int)at.type,
           (int)cudaFreeAsync(a, 0));
    cudaGetLastError();
}

static CUmemGenericAllocationHandle vmm(CUmemLocationType t, int id, size_t n, unsigned long long flags, CUresult *r)
{
    CUmemAllocationProp p;
    CUmemGenericAllocationHandle h = 0;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = t;
    p.location.id = id;
    *r = cuMemCreate(&h, n, &p, flags);
    return h;
}

static void vmm_order(int release_first)
{
    CUmemAccessDesc acc;
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h;
    CUresult r;
    size_t n = 4 * MiB;

    h = vmm(CU_MEM_LOCATION_TYPE_HOST, 0, n, 0, &r);
    printf("vmm %s: cuMemCreate host 4 MiB %d\n", release_first ? "release-then-unmap" : "unmap-then-release", (int)r);
    if (r)
        return;
    printf("  cuMemAddressReserve %d\n", (int)cuMemAddressReserve(&va, n, 0, 0, 0));
    printf("  cuMemMap %d\n", (int)cuMemMap(va, n, 0, h, 0));
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = 0;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    printf("  cuMemSetAccess device %d\n", (int)cuMemSetAccess(va, n, &acc, 1));
    acc.location.type = CU_MEM_LOCATION_TYPE_HOST;
    printf("  cuMemSetAccess host %d\n", (int)cuMemSetAccess(va, n, &acc, 1));
    cudaMemset((void *)va, 1, n);
    cudaDeviceSynchronize();
    printf("  host reads %d\n", ((unsigned char *)va)[n - 1]);
    describe("  vmm", (void *)va, n);
    if (release_first) {
        printf("  cuMemRelease while mapped %d\n", (int)cuMemRelease(h));
        kernel_reads("  vmm after release", (void *)va, n);
        printf("  cuMemUnmap %d\n", (int)cuMemUnmap(va, n));
    } else {
        printf("  cuMemUnmap %d\n", (int)cuMemUnmap(va, n));
        printf("  cuMemRelease %d\n", (int)cuMemRelease(h));
    }
    printf("  cuMemUnmap again %d\n", (int)cuMemUnmap(va, n));
    printf("  cuMemAddressFree %d\n", (int)cuMemAddressFree(va, n));
}

int main(void)
{
    int dev = 0, v = 0;
    size_t gran = 0;
    CUmemAllocationProp p;
    CUresult r;

    setvbuf(stdout, NULL, _IOLBF, 0);   /* every line out before a crash */
    cudaSetDevice(dev);
    cudaFree(0);
    cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev);
    printf("cudaDevAttrMemoryPoolsSupported: %d\n", v);
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, dev);
    printf("CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED: %d\n", v);
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED, dev);
    printf("CU_DEVICE_ATTRIBUTE_HOST_NUMA_MEMORY_POOLS_SUPPORTED: %d\n", v);
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    printf("CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: %d\n", v);
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    printf("CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: %d\n", v);
    cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    printf("CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: %d\n", v);
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_HOST;
    r = cuMemGetAllocationGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    printf("host VMM granularity: %d %zu\n", (int)r, gran);

    vmm_order(1);
    vmm_order(0);
    vmm(CU_MEM_LOCATION_TYPE_HOST, 0, 2 * MiB, 1, &r);
    printf("bad cuMemCreate flags 1: %d\n", (int)r);
    vmm(CU_MEM_LOCATION_TYPE_HOST, 0, MiB, 0, &r);
    printf("bad cuMemCreate 1 MiB: %d\n", (int)r);
    vmm(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0, 2 * MiB, 0, &r);
    printf("bad cuMemCreate host NUMA current: %d\n", (int)r);
    {
        CUdeviceptr va = 0;
        CUmemGenericAllocationHandle h = vmm(CU_MEM_LOCATION_TYPE_HOST, 0, 2 * MiB, 0, &r);
        cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0);
        printf("bad cuMemMap offset 1 MiB: %d\n", (int)cuMemMap(va, 2 * MiB, MiB, h, 0));
        printf("bad cuMemMap beyond the handle: %d\n", (int)cuMemMap(va, 4 * MiB, 0, h, 0));
        printf("bad cuMemMap flags 1: %d\n", (int)cuMemMap(va, 2 * MiB, 0, h, 1));
        printf("bad cuMemUnmap of nothing mapped: %d\n", (int)cuMemUnmap(va, 2 * MiB));
        /* cuMemMap of a released handle crashed the H200's driver
         * (run 48): not asked. */
        cuMemRelease(h);
        cuMemAddressFree(va, 4 * MiB);
    }
    pools();
    /* Not asked: cuMemRelease of a made-up handle crashed the H200's
     * driver (run 48). */
    return 0;
}
