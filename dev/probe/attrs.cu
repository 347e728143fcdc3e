// attrs.cu - the device attributes issue 17 decides by (pageable access,
// host memory pools, host VMM), for every device, one line each.
//   nvcc -O2 -o attrs dev/probe/attrs.cu -lcuda && ./attrs
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>

int main()
{
    static const struct { const char *name; int attr; } a[] = {
        { "PageableMemoryAccess", cudaDevAttrPageableMemoryAccess },
        { "PageableMemoryAccessUsesHostPageTables", cudaDevAttrPageableMemoryAccessUsesHostPageTables },
        { "ConcurrentManagedAccess", cudaDevAttrConcurrentManagedAccess },
        { "DirectManagedMemAccessFromHost", cudaDevAttrDirectManagedMemAccessFromHost },
        { "HostNativeAtomicSupported", cudaDevAttrHostNativeAtomicSupported },
        { "HostRegisterSupported", cudaDevAttrHostRegisterSupported },
        { "MemoryPoolsSupported", cudaDevAttrMemoryPoolsSupported },
        { "HostNumaId", cudaDevAttrHostNumaId },
        { "HostNumaMemoryPoolsSupported", cudaDevAttrHostNumaMemoryPoolsSupported },
        { "HostMemoryPoolsSupported", cudaDevAttrHostMemoryPoolsSupported },
        { "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED(141)", 141 },
    };
    int n = 0;
    cudaGetDeviceCount(&n);
    for (int d = 0; d < n; d++)
        for (const auto &x : a) {
            int v = -99;
            cudaError_t e = cudaDeviceGetAttribute(&v, (cudaDeviceAttr)x.attr, d);
            printf("device %d %s = %d (rc %d)\n", d, x.name, v, (int)e);
        }
    return 0;
}
