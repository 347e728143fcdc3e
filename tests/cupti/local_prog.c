/* local_prog - CUPTI reached from a shared object loaded RTLD_LOCAL (the
 * torch.profiler layout), on the simulated device.  Prints TAP; cupti.sh
 * checks the fake libcupti's log and the report.
 *   local_prog PATH-OF-cupti_user.so [first]
 * "first": the profiler starts before any CUDA call (pincache has loaded no
 * libcupti yet, and must then never take CUPTI). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "tap.h"

int main(int argc, char **argv)
{
    void *h, *p = NULL;
    int (*start)(void) = NULL;
    int first = argc > 2 && !strcmp(argv[2], "first");

    if (argc < 2)
        return 2;
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    ok(h != NULL, "the profiler library loads RTLD_LOCAL (%s)", h ? "" : dlerror());
    if (h)
        *(void **)&start = dlsym(h, "user_profile_start");
    if (first && start)
        is_int(start(), 0, "the profiler's CUPTI calls, before any CUDA call, reach the local libcupti");
    ok(cudaHostAlloc(&p, 4096, 0) == cudaSuccess && cudaFreeHost(p) == cudaSuccess, "CUDA calls work");
    ok(start != NULL, "the profiler has its entry point");
    if (start && !first)
        is_int(start(), 0, "the profiler's CUPTI calls reach the local libcupti through pincache");
    ok(cudaHostAlloc(&p, 4096, 0) == cudaSuccess && cudaFreeHost(p) == cudaSuccess,
       "CUDA calls work after it");
    return done_testing();
}
