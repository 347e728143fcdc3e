/* callcost.cu - what the calls a fence is made of cost on this machine, with
 * the device idle: the floor under the hit pair (scripts/bench.sh).
 *
 *   clock      clock_gettime(CLOCK_MONOTONIC) (pincache times every call)
 *   tsc        rdtsc (pincache times calls with it where the clock source
 *              is tsc, PINCACHE_CLOCK=auto; x86 only)
 *   getdev     cudaGetDevice
 *   rt_legacy  cudaEventRecord on the legacy stream + cudaEventQuery
 *   rt_squery  cudaStreamQuery of an idle non-blocking stream
 *   drv_legacy cuEventRecord + cuEventQuery (the same through the driver)
 *   drv_squery cuStreamQuery
 *   drv_ctx    cuCtxRecordEvent + cuEventQuery (pincache's default fence)
 *              with the 4 idle non-blocking streams of the hit-pair
 *              benchmark; drv_ctx32 with 32
 *   drv_prio   cuCtxGetStreamPriorityRange: pincache's question whether
 *              the context is healthy (fence_cuda.c), once per cached allocation
 *   drv_ctxcur cuCtxGetCurrent: the context a free's fence is recorded in
 *   drv_legacy_squery  cuStreamQuery(CU_STREAM_LEGACY), the question before
 *   drv_evq    cuEventQuery of a completed event
 *   ctx_immediate  how many of 2000 context-wide records on the idle
 *              device report complete at once
 *
 * Each is timed over batches of 1000 calls; the median batch gives ns per
 * call.  Prints "RESULT callcost op=NAME ns=X" per line, and the kernel's
 * clock source.  Build: nvcc -O2 -cudart shared -arch=sm_90 callcost.cu -lcuda */
#include "../gpu/gpu_common.cuh"
#include <cuda.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <algorithm>
#include <vector>

#define BATCH 1000
#define BATCHES 51

template <typename F> static double median_ns(F f)
{
    std::vector<double> v;
    for (int b = 0; b < BATCHES; b++) {
        uint64_t t0 = host_ns();
        for (int i = 0; i < BATCH; i++)
            f();
        v.push_back((double)(host_ns() - t0) / BATCH);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    CUevent de;
    char src[64] = "unknown";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

    if (f) {
        if (fscanf(f, "%63s", src) != 1)
            strcpy(src, "unknown");
        fclose(f);
    }
    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    if (cuEventCreate(&de, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return 2;
    CK(cudaDeviceSynchronize());
    int dev, bad = 0;
    printf("RESULT callcost clocksource=%s\n", src);
    printf("RESULT callcost op=clock ns=%.1f\n", median_ns([] { (void)host_ns(); }));
#if defined(__x86_64__)
    {
        volatile unsigned long long sink;
        printf("RESULT callcost op=tsc ns=%.1f\n", median_ns([&] { sink = __rdtsc(); }));
    }
#endif
    printf("RESULT callcost op=getdev ns=%.1f\n", median_ns([&] { bad |= cudaGetDevice(&dev) != cudaSuccess; }));
    printf("RESULT callcost op=rt_legacy ns=%.1f\n", median_ns([&] {
               bad |= cudaEventRecord(e, cudaStreamLegacy) != cudaSuccess;
               bad |= cudaEventQuery(e) != cudaSuccess;
           }));
    printf("RESULT callcost op=rt_squery ns=%.1f\n", median_ns([&] { bad |= cudaStreamQuery(s) != cudaSuccess; }));
    printf("RESULT callcost op=drv_legacy ns=%.1f\n", median_ns([&] {
               bad |= cuEventRecord(de, CU_STREAM_LEGACY) != CUDA_SUCCESS;
               bad |= cuEventQuery(de) != CUDA_SUCCESS;
           }));
    printf("RESULT callcost op=drv_squery ns=%.1f\n", median_ns([&] { bad |= cuStreamQuery((CUstream)s) != CUDA_SUCCESS; }));
    {
        CUcontext ctx;
        std::vector<cudaStream_t> st(32);
        if (cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
            return 2;
        for (auto &x : st)
            CK(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
        /* s and 3 of these: the hit pair's 4 streams; then all 32 + s. */
        for (int i = 4; i < 32; i++)
            CK(cudaStreamDestroy(st[i]));
        CK(cudaDeviceSynchronize());
        printf("RESULT callcost op=drv_ctx ns=%.1f\n", median_ns([&] {
                   bad |= cuCtxRecordEvent(ctx, de) != CUDA_SUCCESS;
                   bad |= cuEventQuery(de) != CUDA_SUCCESS;
               }));
        for (int i = 4; i < 32; i++)
            CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking));
        CK(cudaDeviceSynchronize());
        printf("RESULT callcost op=drv_ctx32 ns=%.1f\n", median_ns([&] {
                   bad |= cuCtxRecordEvent(ctx, de) != CUDA_SUCCESS;
                   bad |= cuEventQuery(de) != CUDA_SUCCESS;
               }));
        printf("RESULT callcost op=drv_prio ns=%.1f\n", median_ns([&] {
                   int lo, hi;
                   bad |= cuCtxGetStreamPriorityRange(&lo, &hi) != CUDA_SUCCESS;
               }));
        printf("RESULT callcost op=drv_ctxcur ns=%.1f\n", median_ns([&] {
                   CUcontext c;
                   bad |= cuCtxGetCurrent(&c) != CUDA_SUCCESS;
               }));
        printf("RESULT callcost op=drv_legacy_squery ns=%.1f\n", median_ns([&] {
                   bad |= cuStreamQuery(CU_STREAM_LEGACY) != CUDA_SUCCESS;
               }));
        printf("RESULT callcost op=drv_evq ns=%.1f\n", median_ns([&] {
                   bad |= cuEventQuery(de) != CUDA_SUCCESS;
               }));
        int now = 0;
        for (int i = 0; i < 2000; i++) {
            bad |= cuCtxRecordEvent(ctx, de) != CUDA_SUCCESS;
            now += cuEventQuery(de) == CUDA_SUCCESS;
            CK(cudaDeviceSynchronize());
        }
        printf("RESULT callcost ctx_immediate=%d/2000\n", now);
        for (auto &x : st)
            CK(cudaStreamDestroy(x));
    }
    /* What classifying a copy's host side costs (pincache's report asks for
     * every copy it cannot place in its own cache). */
    {
        void *pg = malloc(65536), *pn = NULL;
        struct cudaPointerAttributes a;
        CK(cudaHostAlloc(&pn, 65536, 0));
        memset(pg, 1, 65536);
        printf("RESULT callcost op=ptrattr_pageable ns=%.1f\n", median_ns([&] {
            bad |= cudaPointerGetAttributes(&a, pg) != cudaSuccess || a.type != cudaMemoryTypeUnregistered;
        }));
        printf("RESULT callcost op=ptrattr_pinned ns=%.1f\n", median_ns([&] {
            bad |= cudaPointerGetAttributes(&a, pn) != cudaSuccess || a.type != cudaMemoryTypeHost;
        }));
        CK(cudaFreeHost(pn));
        free(pg);
    }
    printf("RESULT callcost errors=%d\n", bad);
    return bad ? 1 : 0;
}
