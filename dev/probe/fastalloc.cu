// fastalloc.cu - issue 18's observables: for a cudaHostAlloc block and for
// an mmap'd, huge-page-advised, pre-faulted block registered with
// cudaHostRegister, what every query a program can make answers, flag
// combination by flag combination, and what each costs to make, to free
// and to fork.  One line per observable: "OBS kind flags what = answer".
//   nvcc -O2 -arch=sm_90 -cudart shared -o fastalloc dev/probe/fastalloc.cu -lcuda && ./fastalloc
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// Touch every page of [p, p+n) on nthreads threads.
static void prefault(char *p, size_t n, int nthreads)
{
    std::vector<std::thread> th;
    size_t per = (n / nthreads + 4095) & ~(size_t)4095;
    for (int i = 0; i < nthreads; i++)
        th.emplace_back([=] {
            for (size_t o = (size_t)i * per; o < n && o < (size_t)(i + 1) * per; o += 4096)
                p[o] = 0;
        });
    for (auto &t : th)
        t.join();
}

// How the registered kind's memory is mapped: 0 private anonymous, 1 shared
// anonymous (fork shares it instead of copying), 2 a memfd, shared.
static int g_variant;

// The registered kind: flags are cudaHostAlloc's, mapped to register flags.
static void *fast_alloc(size_t n, unsigned flags, cudaError_t *e)
{
    unsigned rf = 0;
    void *p;
    if (g_variant == 2) {
        int fd = memfd_create("fastalloc", 0);
        if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
            *e = cudaErrorMemoryAllocation;
            return NULL;
        }
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
    } else {
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, (g_variant ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1, 0);
    }
    if (p == MAP_FAILED) {
        *e = cudaErrorMemoryAllocation;
        return NULL;
    }
    madvise(p, n, MADV_HUGEPAGE);
    prefault((char *)p, n, 16);
    if (flags & cudaHostAllocPortable)
        rf |= cudaHostRegisterPortable;
    if (flags & cudaHostAllocMapped)
        rf |= cudaHostRegisterMapped;
    *e = cudaHostRegister(p, n, rf);
    return p;
}

static void fast_free(void *p, size_t n)
{
    cudaHostUnregister(p);
    munmap(p, n);
}

#define OBS(fmt, ...) printf("OBS %s %u " fmt "\n", kind, flags, __VA_ARGS__)

static void observe(const char *kind, unsigned flags, char *p, size_t n)
{
    unsigned f = 0;
    void *d = NULL;
    cudaPointerAttributes a;
    cudaError_t e;
    CUresult r;

    e = cudaHostGetFlags(&f, p);
    OBS("cudaHostGetFlags(base) = %d flags %u", (int)e, f);
    cudaGetLastError();
    f = 0;
    e = cudaHostGetFlags(&f, p + 8192);
    OBS("cudaHostGetFlags(interior) = %d flags %u", (int)e, f);
    cudaGetLastError();
    f = 0;
    r = cuMemHostGetFlags(&f, p);
    OBS("cuMemHostGetFlags(base) = %d flags %u", (int)r, f);
    e = cudaHostGetDevicePointer(&d, p, 0);
    OBS("cudaHostGetDevicePointer = %d %s", (int)e, d == p ? "same" : d ? "other" : "null");
    cudaGetLastError();
    memset(&a, 0, sizeof a);
    e = cudaPointerGetAttributes(&a, p + 8192);
    OBS("cudaPointerGetAttributes(interior) = %d type %d device %d dev %s host %s", (int)e, (int)a.type, a.device,
        a.devicePointer == p + 8192 ? "same" : a.devicePointer ? "other" : "null",
        a.hostPointer == p + 8192 ? "same" : a.hostPointer ? "other" : "null");
    {
        CUdeviceptr start = 0;
        size_t size = 0;
        unsigned int mt = 0, mapped = 0, managed = 0, legacy_ipc = 0, syncm = 0;
        CUcontext ctx = NULL, cur = NULL;
        void *hp = NULL;
        CUdeviceptr dp = 0;
        int ord = -9;
        cuCtxGetCurrent(&cur);
        r = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)(p + 8192));
        OBS("RANGE_START_ADDR = %d %s", (int)r, start == (CUdeviceptr)p ? "base" : start ? "other" : "0");
        r = cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(p + 8192));
        OBS("RANGE_SIZE = %d %zu (n %zu)", (int)r, size, n);
        r = cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)p);
        OBS("MEMORY_TYPE = %d %u", (int)r, mt);
        r = cuPointerGetAttribute(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, (CUdeviceptr)p);
        OBS("MAPPED = %d %u", (int)r, mapped);
        r = cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)p);
        OBS("IS_MANAGED = %d %u", (int)r, managed);
        r = cuPointerGetAttribute(&legacy_ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, (CUdeviceptr)p);
        OBS("IS_LEGACY_CUDA_IPC_CAPABLE = %d %u", (int)r, legacy_ipc);
        r = cuPointerGetAttribute(&syncm, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, (CUdeviceptr)p);
        OBS("SYNC_MEMOPS = %d %u", (int)r, syncm);
        r = cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p);
        OBS("CONTEXT = %d %s", (int)r, ctx == cur ? "current" : ctx ? "other" : "null");
        r = cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)p);
        OBS("HOST_POINTER = %d %s", (int)r, hp == p ? "same" : hp ? "other" : "null");
        r = cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, (CUdeviceptr)p);
        OBS("DEVICE_POINTER = %d %s", (int)r, dp == (CUdeviceptr)p ? "same" : dp ? "other" : "0");
        r = cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
        OBS("DEVICE_ORDINAL = %d %d", (int)r, ord);
    }
    e = cudaHostRegister(p + 4096, 4096, 0);
    OBS("cudaHostRegister(inside) = %d", (int)e);
    cudaGetLastError();
    if (e == cudaSuccess)
        cudaHostUnregister(p + 4096);
    e = cudaFreeHost(p + 4096);
    OBS("cudaFreeHost(interior) = %d", (int)e);
    cudaGetLastError();
    e = cudaHostUnregister(p + 4096);
    OBS("cudaHostUnregister(interior) = %d", (int)e);
    cudaGetLastError();
    {
        // what a fork child sees: the block's bytes, and how long fork() takes
        double t0;
        pid_t pid;
        int st = 0;
        p[0] = 42;
        t0 = now_ms();
        pid = fork();
        if (pid == 0)
            _exit(p[0] == 42 ? 0 : 3);
        double fork_ms = now_ms() - t0;
        waitpid(pid, &st, 0);
        OBS("fork child sees the bytes = %d (fork %.3f ms for %zu MiB)", WIFEXITED(st) ? WEXITSTATUS(st) : -1, fork_ms,
            n >> 20);
    }
}

int main()
{
    static const unsigned combos[] = { 0, cudaHostAllocPortable, cudaHostAllocMapped,
                                       cudaHostAllocPortable | cudaHostAllocMapped, cudaHostAllocWriteCombined };
    const size_t n = (size_t)64 << 20;

    setvbuf(stdout, NULL, _IOLBF, 0);
    cudaFree(0);
    for (unsigned flags : combos) {
        char *p = NULL;
        cudaError_t e = cudaHostAlloc((void **)&p, n, flags);
        const char *kind = "hostalloc";
        if (e == cudaSuccess) {
            observe(kind, flags, p, n);
            cudaFreeHost(p);
        }
        if (flags & cudaHostAllocWriteCombined)
            continue;
        kind = "registered";
        p = (char *)fast_alloc(n, flags, &e);
        if (p && e == cudaSuccess) {
            observe(kind, flags, p, n);
            fast_free(p, n);
        } else {
            printf("OBS registered %u fast_alloc failed %d\n", flags, (int)e);
        }
    }
    // costs, cold, ms: alloc / free, for 64 MiB and 1 GiB, each variant;
    // fork with a live block; the kernel's huge page settings
    for (const char *f : { "/sys/kernel/mm/transparent_hugepage/enabled",
                           "/sys/kernel/mm/transparent_hugepage/shmem_enabled" }) {
        char buf[256] = "";
        FILE *fp = fopen(f, "r");
        if (fp) {
            if (!fgets(buf, sizeof buf, fp))
                buf[0] = 0;
            fclose(fp);
        }
        printf("THP %s: %s", f, buf[0] ? buf : "(unreadable)\n");
    }
    for (g_variant = 0; g_variant < 3; g_variant++)
    for (size_t sz : { (size_t)64 << 20, (size_t)1 << 30 }) {
        double t0 = now_ms();
        void *p = NULL;
        cudaHostAlloc(&p, sz, 0);
        double a = now_ms() - t0;
        t0 = now_ms();
        cudaFreeHost(p);
        double f = now_ms() - t0;
        cudaError_t e;
        t0 = now_ms();
        p = fast_alloc(sz, 0, &e);
        double a2 = now_ms() - t0;
        t0 = now_ms();
        fast_free(p, sz);
        double f2 = now_ms() - t0;
        double fk = -1;
        int seen = -1;
        p = fast_alloc(sz, 0, &e);
        if (p && e == cudaSuccess) {
            int st = 0;
            ((char *)p)[12345] = 7;
            t0 = now_ms();
            pid_t pid = fork();
            if (pid == 0)
                _exit(((char *)p)[12345] == 7 ? 0 : 3);
            fk = now_ms() - t0;
            waitpid(pid, &st, 0);
            seen = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            fast_free(p, sz);
        }
        printf("COST variant %d (%s) %zu MiB hostalloc %.1f / %.1f ms, registered %.1f / %.1f ms (rc %d); "
               "fork with it live %.2f ms, child read it: %d\n",
               g_variant, g_variant == 0 ? "private" : g_variant == 1 ? "shared" : "memfd", sz >> 20, a, f, a2, f2,
               (int)e, fk, seen);
    }
    return 0;
}
