/* drv_batch - the driver's batched copies reached as a static cudart 13
 * reaches them: cuGetProcAddress_v2 of "cuMemcpyBatchAsync" and
 * "cuMemcpy3DBatchAsync" at 12080 (the failIdx ABI) and 13000 (_v2), each
 * legacy and per-thread, and by name through dlsym (cuMemcpyBatchAsync_v2,
 * cuMemcpy3DBatchAsync_v2).  Under the shim (PINCACHE_LIB_EXPECTED=1)
 * every one is pincache's.  Each 1D form copies two pinned operands to the
 * device on a created stream (stream 0, the per-thread stream, for the
 * per-thread forms), each 3D form one operand of 64 x 8 x 2; the bytes must
 * arrive.  drvbatch.sh counts 5 batches of 2 operands and 5 3D batches. */
#include "drv_test.h"
#include <stdint.h>
#include <stdlib.h>
#include <cuda.h>
#include "../tap.h"

#undef cuMemcpyBatchAsync
#undef cuMemcpy3DBatchAsync
#define N 4096

typedef CUresult (*b12_t)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t,
                          size_t *, CUstream);
typedef CUresult (*b13_t)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *, size_t,
                          CUstream);
typedef CUresult (*d12_t)(size_t, CUDA_MEMCPY3D_BATCH_OP *, size_t *, unsigned long long, CUstream);
typedef CUresult (*d13_t)(size_t, CUDA_MEMCPY3D_BATCH_OP *, unsigned long long, CUstream);

static CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static int shim;

static void *get(const char *name, int ver, int pt)
{
    void *fn = NULL;

    gpa(name, &fn, ver, pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, NULL);
    return fn;
}

static void owner(void *fn, const char *what)
{
    const char *lib = lib_of(fn);
    ok(fn && (!shim || strcmp(lib, "libpincache.so") == 0), "%s: resolved, from %s", what, lib);
}

int main(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned), (*retain)(CUcontext *, CUdevice), (*setcur)(CUcontext);
    CUresult (*halloc)(void **, size_t, unsigned), (*malloc_)(CUdeviceptr *, size_t), (*screate)(CUstream *, unsigned);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t), (*csync)(void);
    CUmemcpyAttributes a;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr dev;
    unsigned char *pin, back[N];
    size_t idx = 0, sz[2] = { N, N }, fail = 0;
    int k = 0;
    const char *e = getenv("PINCACHE_LIB_EXPECTED");

    shim = e && *e == '1';
    if (!h || !(*(void **)&gpa = dlsym(h, "cuGetProcAddress_v2")))
        skip_all("no libcuda.so.1");
#define G(v, name, ver) (*(void **)&v = get(name, ver, 0))
    G(init, "cuInit", 2000); G(retain, "cuDevicePrimaryCtxRetain", 7000); G(setcur, "cuCtxSetCurrent", 4000);
    G(halloc, "cuMemHostAlloc", 2020); G(malloc_, "cuMemAlloc", 3020); G(screate, "cuStreamCreate", 2000);
    G(dtoh, "cuMemcpyDtoH", 3020); G(csync, "cuCtxSynchronize", 2000);
    ok(init(0) == 0 && retain(&ctx, 0) == 0 && setcur(ctx) == 0 && halloc((void **)&pin, N, 0) == 0 &&
       malloc_(&dev, 16 * N) == 0 && screate(&s, 0) == 0, "set-up");
    for (int i = 0; i < N; i++)
        pin[i] = (unsigned char)(i * 13 + 5);
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    {
        b12_t f12[2] = { get("cuMemcpyBatchAsync", 12080, 0), get("cuMemcpyBatchAsync", 12080, 1) };
        b13_t f13[3] = { get("cuMemcpyBatchAsync", 13000, 0), get("cuMemcpyBatchAsync", 13000, 1),
                         dlsym(h, "cuMemcpyBatchAsync_v2") };
        const char *what[5] = { "12080", "12080 per-thread", "13000", "13000 per-thread", "dlsym _v2" };

        for (int f = 0; f < 5; f++, k += 2) {
            CUdeviceptr d[2] = { dev + (size_t)k * N, dev + (size_t)(k + 1) * N };
            CUdeviceptr src[2] = { (CUdeviceptr)(uintptr_t)pin, (CUdeviceptr)(uintptr_t)pin };
            CUstream q = f == 1 || f == 3 ? 0 : s;
            CUresult r;

            owner(f < 2 ? (void *)f12[f] : (void *)f13[f - 2], what[f]);
            r = f < 2 ? f12[f](d, src, sz, 2, &a, &idx, 1, &fail, q) : f13[f - 2](d, src, sz, 2, &a, &idx, 1, q);
            /* 13.0's per-thread form refuses stream 0 (measured, H200) */
            is_int(r, f == 3 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "cuMemcpyBatchAsync %s", what[f]);
        }
    }
    {
        d12_t g12[2] = { get("cuMemcpy3DBatchAsync", 12080, 0), get("cuMemcpy3DBatchAsync", 12080, 1) };
        d13_t g13[3] = { get("cuMemcpy3DBatchAsync", 13000, 0), get("cuMemcpy3DBatchAsync", 13000, 1),
                         dlsym(h, "cuMemcpy3DBatchAsync_v2") };
        const char *what[5] = { "3D 12080", "3D 12080 per-thread", "3D 13000", "3D 13000 per-thread", "3D dlsym _v2" };

        for (int f = 0; f < 5; f++, k++) {
            CUDA_MEMCPY3D_BATCH_OP op;
            CUstream q = f == 1 || f == 3 ? 0 : s;
            CUresult r;

            memset(&op, 0, sizeof op);
            op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
            op.src.op.ptr.ptr = (CUdeviceptr)(uintptr_t)pin;
            op.dst.op.ptr.ptr = dev + (size_t)k * N;
            op.extent.width = 64;
            op.extent.height = 8;
            op.extent.depth = 2;
            op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
            owner(f < 2 ? (void *)g12[f] : (void *)g13[f - 2], what[f]);
            r = f < 2 ? g12[f](1, &op, &fail, 0, q) : g13[f - 2](1, &op, 0, q);
            is_int(r, f == 3 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "cuMemcpy3DBatchAsync %s", what[f]);
        }
    }
    ok(csync() == 0, "synchronized");
    {
        int bad = 0;
        for (int i = 0; i < 15; i++) {
            size_t n = i < 10 ? N : 1024;
            if (i == 6 || i == 7 || i == 13)
                continue;    /* the refused 13.0 per-thread calls' slots */
            bad += !(dtoh(back, dev + (size_t)i * N, n) == 0 && memcmp(back, pin, n) == 0);
        }
        is_int(bad, 0, "every operand's bytes arrived");
    }
    return done_testing();
}
