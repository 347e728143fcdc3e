/* cupti_user.c - a profiler-like shared object that links libcupti, as
 * libtorch_cuda.so (Kineto) does, for local_prog to dlopen RTLD_LOCAL: its
 * references to CUPTI bind to pincache's exported wrappers, while the
 * libcupti they must reach sits in a local scope, out of RTLD_NEXT's sight. */
#include <stddef.h>
#include <stdint.h>
#include "../doubles/fake_cupti.h"

static void user_req(uint8_t **buf, size_t *size, size_t *max)
{
    static uint8_t mine[4096] __attribute__((aligned(8)));

    *buf = mine;
    *size = sizeof mine;
    *max = 0;
}

static void user_comp(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
}

/* Start "profiling": 0 or the first CUPTI error. */
__attribute__((visibility("default"))) int user_profile_start(void)
{
    int r = cuptiActivityRegisterCallbacks(user_req, user_comp);

    return r ? r : cuptiActivityEnable(10);
}
