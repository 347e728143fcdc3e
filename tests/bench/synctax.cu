/* synctax.cu - synctax.c on a real GPU (tests/bench/synctax.sh builds it
 * with nvcc; the section "synctax" of tests/gpu/sections.sh): the same
 * measurement, after one real kernel on the measured stream, so that the
 * calls find a device that has run work and is idle again.
 * Build: nvcc -O2 -cudart shared -arch=sm_90 synctax.cu */
#include <cuda_runtime.h>

__global__ void synctax_nop(void)
{
}

static void synctax_warm(cudaStream_t s)
{
    synctax_nop<<<1, 1, 0, s>>>();
}

#define SYNCTAX_WARM(s) synctax_warm(s)
#include "synctax.c"
