/* gpu_common.cuh - helpers shared by the real-GPU tests and the benchmarks. */
#ifndef PC_GPU_COMMON_CUH
#define PC_GPU_COMMON_CUH

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Any unexpected CUDA error ends the program with status 2 (1 means "test
 * ran and found a problem"). */
#define CK(call)                                                             \
    do {                                                                     \
        cudaError_t ck_e_ = (call);                                          \
        if (ck_e_ != cudaSuccess) {                                          \
            fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__,         \
                    __LINE__, #call, (int)ck_e_, cudaGetErrorString(ck_e_)); \
            printf("FATAL cuda error %d at %s:%d\n", (int)ck_e_, __FILE__,   \
                   __LINE__);                                                \
            fflush(stdout);                                                  \
            exit(2);                                                         \
        }                                                                    \
    } while (0)

/* "PASS id text", "FAIL id text" or "INFO id text" on stdout, flushed
 * (gpu-suite.sh's checks() reads them); FAILs are counted in gpu_fails. */
static int gpu_fails;

static inline void __attribute__((format(printf, 3, 4))) gpu_line(const char *kind, const char *id,
                                                                 const char *fmt, ...)
{
    va_list ap;
    printf("%s %s ", kind, id);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!strcmp(kind, "FAIL"))
        gpu_fails++;
}
#define GPU_CHECK(ok, id, ...) gpu_line((ok) ? "PASS" : "FAIL", id, __VA_ARGS__)

static inline uint64_t host_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline double ms_since(uint64_t t0) { return (double)(host_ns() - t0) / 1e6; }

/* globaltimer ticks in ns on every GPU we target; good enough for >= 10 us. */
__device__ __forceinline__ uint64_t dev_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ void dev_spin_ns(uint64_t ns)
{
    uint64_t t0 = dev_ns();
    while (dev_ns() - t0 < ns) {
    }
}

/* Spin for ns, then (if flag) store 1 through a mapped pointer so the host
 * can see that the kernel has finished. */
__global__ void k_spin(uint64_t ns, volatile int *flag)
{
    dev_spin_ns(ns);
    if (flag) {
        *flag = 1;
        __threadfence_system();
    }
}

/* Word i of the buffer filled for tag.  A bijection in tag for fixed i, so
 * two different tags differ in every word. */
__host__ __device__ __forceinline__ uint32_t pat32(uint32_t tag, uint64_t i)
{
    uint32_t x = (uint32_t)i * 0x9E3779B1u ^ tag * 0x85EBCA77u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return x;
}

#endif
