/* ctxhealth.cu - which cheap driver call tells that a kernel fault broke
 * the current context, and what does each cost on a healthy one?  Not a
 * test: one RESULT line per run.
 *   ctxhealth OP [trap|addr]
 * Times OP on the healthy context (median of 51 batches of 1000 calls),
 * then a kernel faults (__trap: 719, or a store to 0x10: 700), the host
 * sleeps 500 ms with no CUDA call, and OP is the first call made: its
 * answer, then cuStreamQuery(legacy)'s as the control.  OP is a number
 * (the table in main); "list" prints them.  One process per OP: the fault
 * ends the context.
 * Build: nvcc -O2 -arch=sm_90 -cudart shared -o ctxhealth ctxhealth.cu -lcuda */
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vector>

__global__ void k_trap(void)
{
    __trap();
}

__global__ void k_bad_store(void)
{
    *(volatile int *)0x10 = 1;
}

static CUstream s_nb;
static CUevent ev_never, ev_done;
static CUcontext ctx;

static CUresult op(int i)
{
    unsigned int u;
    int a, b;
    size_t z;
    unsigned long long id;
    CUfunc_cache cc;
    CUdevice d;
    CUstreamCaptureStatus cs;
    CUexecAffinityParam ea;

    switch (i) {
    case 0: return cuStreamQuery(CU_STREAM_LEGACY);
    case 1: return cuEventQuery(ev_never);
    case 2: return cuEventQuery(ev_done);
    case 3: return cuStreamQuery(s_nb);
    case 4: return cuCtxGetFlags(&u);
    case 5: return cuCtxGetLimit(&z, CU_LIMIT_STACK_SIZE);
    case 6: return cuCtxGetCacheConfig(&cc);
    case 7: return cuCtxGetStreamPriorityRange(&a, &b);
    case 8: return cuCtxGetId(ctx, &id);
    case 9: return cuCtxGetApiVersion(ctx, &u);
    case 10: return cuStreamGetFlags(CU_STREAM_LEGACY, &u);
    case 11: return cuStreamGetPriority(s_nb, &a);
    case 12: return cuStreamGetId(s_nb, &id);
    case 13: return cuStreamIsCapturing(s_nb, &cs);
    case 14: return cuCtxGetDevice(&d);
    case 15: return cuCtxGetExecAffinity(&ea, CU_EXEC_AFFINITY_TYPE_SM_COUNT);
    case 16: return cuDevicePrimaryCtxGetState(0, &u, &a);
    case 17: return cuStreamQuery(CU_STREAM_PER_THREAD);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static const char *names[] = {
    "cuStreamQuery(legacy)", "cuEventQuery(never recorded)", "cuEventQuery(completed)",
    "cuStreamQuery(idle non-blocking)", "cuCtxGetFlags", "cuCtxGetLimit(stack)", "cuCtxGetCacheConfig",
    "cuCtxGetStreamPriorityRange", "cuCtxGetId", "cuCtxGetApiVersion", "cuStreamGetFlags(legacy)",
    "cuStreamGetPriority(non-blocking)", "cuStreamGetId(non-blocking)", "cuStreamIsCapturing(non-blocking)",
    "cuCtxGetDevice", "cuCtxGetExecAffinity(SM count)", "cuDevicePrimaryCtxGetState", "cuStreamQuery(per-thread)",
};
#define NOPS ((int)(sizeof names / sizeof names[0]))

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int i, bad = 0, trap = argc < 3 || strcmp(argv[2], "addr") != 0;
    std::vector<double> v;

    if (argc < 2 || strcmp(argv[1], "list") == 0) {
        for (i = 0; i < NOPS; i++)
            printf("%d %s\n", i, names[i]);
        return 0;
    }
    i = atoi(argv[1]);
    if (i < 0 || i >= NOPS)
        return 2;
    if (cudaFree(0) != cudaSuccess || cuCtxGetCurrent(&ctx) != CUDA_SUCCESS ||
        cuStreamCreate(&s_nb, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cuEventCreate(&ev_never, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        cuEventCreate(&ev_done, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        cuEventRecord(ev_done, CU_STREAM_LEGACY) != CUDA_SUCCESS || cudaDeviceSynchronize() != cudaSuccess)
        return 1;
    for (int b = 0; b < 51; b++) {
        double t0 = now_ns();
        for (int k = 0; k < 1000; k++)
            bad |= op(i) != CUDA_SUCCESS;
        v.push_back((now_ns() - t0) / 1000);
    }
    std::sort(v.begin(), v.end());
    if (trap)
        k_trap<<<1, 1>>>();
    else
        k_bad_store<<<1, 1>>>();
    usleep(500000);
    CUresult after = op(i), control = cuStreamQuery(CU_STREAM_LEGACY);
    printf("RESULT ctxhealth op=%d kind=%s ns=%.1f healthy_errors=%d after=%d control=%d name=\"%s\"\n", i,
           trap ? "trap" : "addr", v[v.size() / 2], bad, (int)after, (int)control, names[i]);
    return 0;
}
