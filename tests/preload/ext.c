/* ext.c - stands in for a Python extension module (torch's libtorch_cuda.so):
 * it needs libcudart.so.13 but is dlopen'ed RTLD_LOCAL, so the runtime is not
 * in the global scope and dlsym(RTLD_NEXT) cannot find it. */
#include <cuda_runtime_api.h>
#include "sim.h"

int ext_churn(int iters, unsigned long long *real_allocs)
{
    struct sim_counters c0, c1;
    int errors = 0;

    simCounters(&c0);
    for (int i = 0; i < iters; i++) {
        void *p = NULL;
        if (cudaHostAlloc(&p, 1 << 20, 0) != cudaSuccess || !p) {
            errors++;
            continue;
        }
        ((volatile char *)p)[0] = (char)i;
        if (cudaFreeHost(p) != cudaSuccess)
            errors++;
    }
    simCounters(&c1);
    *real_allocs = c1.host_allocs - c0.host_allocs;
    return errors;
}
