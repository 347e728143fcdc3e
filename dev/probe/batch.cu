// batch.cu - what the runtime does with cudaMemcpyBatchAsync (issue 17,
// item 1): the facts the simulated device follows (tests/doubles/README.md
// "Batched copies: measured", docs/runtime-facts.md "Batched copies") and
// the rules of src/api/batch.c.  One line per measurement.
//   nvcc -O2 -arch=sm_90 -o /tmp/batch dev/probe/batch.cu && /tmp/batch
//
// (a) validation: code, cudaGetLastError after it, and whether operand 0
//     (a valid pinned one) moved, for each bad argument.  failIdx is not
//     measured: cudart 13 has no failIdx argument, and a cudart 12.8
//     program cannot be built here against the 13.0 headers; the 12 ABI's
//     failIdx values in the sim stay assumed (SIZE_MAX for a whole-batch
//     error, the index for an operand's).  cuMemcpyBatchAsync (12080, with
//     failIdx) is measured through cudaGetDriverEntryPointByVersion instead.
// (b) H2D from pageable memory, one operand per srcAccessOrder, queued
//     behind a 100 ms spin kernel: the call's time, and whether the device
//     got the bytes at the call ('A') or those the host wrote after it
//     returned ('Z'), for 64 KiB and 16 MiB.
// (c) the same D2H into pageable memory: the call's time, and whether the
//     data was there when the call returned.
// (d) a mixed batch (pinned, pageable Stream, pageable DuringApiCall,
//     pageable Any, 16 MiB each) behind the kernel: time, and per operand
//     'A' or 'Z'.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cuda.h>
#include <cuda_runtime.h>

#undef cuMemcpyBatchAsync
// The per-thread forms (declared by cuda_runtime_api.h only under
// --default-stream per-thread, as the plain names).
extern "C" cudaError_t cudaMemcpyBatchAsync_ptsz(void *const *, const void *const *, const size_t *, size_t,
                                                 cudaMemcpyAttributes *, size_t *, size_t, cudaStream_t);
extern "C" cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t, cudaMemcpy3DBatchOp *, unsigned long long,
                                                   cudaStream_t);
typedef CUresult (*batch12_t)(CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *, size_t *,
                              size_t, size_t *, CUstream);

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

static long long cycles_per_ms;

static double now_ms()
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static cudaMemcpyAttributes attr(cudaMemcpySrcAccessOrder o)
{
    cudaMemcpyAttributes a;
    memset(&a, 0, sizeof a);
    a.srcAccessOrder = o;
    return a;
}

static const char *order_name(int o)
{
    return o == 1 ? "Stream" : o == 2 ? "DuringApiCall" : o == 3 ? "Any" : "?";
}

// What the device holds at d: 'A', 'Z', or 'mixed'.
static const char *device_says(const void *d, size_t n)
{
    static char buf[64];
    unsigned char *h = (unsigned char *)malloc(n);
    size_t a = 0, z = 0;
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
    for (size_t i = 0; i < n; i++)
        a += h[i] == 'A', z += h[i] == 'Z';
    free(h);
    if (a == n)
        return "A";
    if (z == n)
        return "Z";
    snprintf(buf, sizeof buf, "mixed(A=%zu,Z=%zu)", a, z);
    return buf;
}

static void part_a(cudaStream_t s)
{
    const size_t n = 4096;
    char *dev, *pin;
    cudaMalloc(&dev, 4 * n);
    cudaMallocHost(&pin, n);
    memset(pin, 'A', n);
    void *d[2] = { dev, dev + n };
    const void *src[2] = { pin, pin };
    size_t sz[2] = { n, n }, sz0[2] = { n, 0 }, idx[2] = { 0, 1 }, back[2] = { 1, 0 };
    cudaMemcpyAttributes a[2] = { attr(cudaMemcpySrcAccessOrderStream), attr(cudaMemcpySrcAccessOrderStream) };
    cudaMemcpyAttributes bad0 = attr((cudaMemcpySrcAccessOrder)0), bad4 = attr((cudaMemcpySrcAccessOrder)4);
    cudaMemcpyAttributes flags2 = attr(cudaMemcpySrcAccessOrderStream);
    flags2.flags = 2;
#define A(name, ...)                                                                              \
    do {                                                                                          \
        cudaMemset(dev, 0, n);                                                                    \
        cudaDeviceSynchronize();                                                                  \
        cudaError_t r_ = cudaMemcpyBatchAsync(__VA_ARGS__);                                       \
        cudaError_t l_ = cudaGetLastError();                                                      \
        cudaDeviceSynchronize();                                                                  \
        printf("a %s code=%d last=%d op0=%s\n", name, (int)r_, (int)l_, device_says(dev, n));     \
    } while (0)
    A("count0", d, src, sz, 0, a, idx, 1, s);
    A("dsts-null", nullptr, src, sz, 2, a, idx, 1, s);
    A("srcs-null", d, nullptr, sz, 2, a, idx, 1, s);
    A("sizes-null", d, src, nullptr, 2, a, idx, 1, s);
    A("attrs-null", d, src, sz, 2, nullptr, idx, 1, s);
    A("idxs-null", d, src, sz, 2, a, nullptr, 1, s);
    A("numattrs0", d, src, sz, 2, a, idx, 0, s);
    A("numattrs-over-count", d, src, sz, 1, a, idx, 2, s);
    A("idx0-not-0", d, src, sz, 2, a, idx + 1, 1, s);
    A("idx-not-increasing", d, src, sz, 2, a, back, 2, s);
    A("size0-second", d, src, sz0, 2, a, idx, 1, s);
    A("order0", d, src, sz, 2, &bad0, idx, 1, s);
    A("order4", d, src, sz, 2, &bad4, idx, 1, s);
    A("flags2", d, src, sz, 2, &flags2, idx, 1, s);
    A("legacy-stream-0", d, src, sz, 2, a, idx, 1, 0);
    A("legacy-stream-explicit", d, src, sz, 2, a, idx, 1, cudaStreamLegacy);
    A("per-thread-stream", d, src, sz, 2, a, idx, 1, cudaStreamPerThread);
    // The per-thread form's stream 0 (2026-12-05: the GPU fuzzer met a 1
    // there, on an H100), and the 3D forms' streams.
#define A_CALL(name, call)                                                                        \
    do {                                                                                          \
        cudaMemset(dev, 0, n);                                                                    \
        cudaDeviceSynchronize();                                                                  \
        cudaError_t r_ = (call);                                                                  \
        cudaError_t l_ = cudaGetLastError();                                                      \
        cudaDeviceSynchronize();                                                                  \
        printf("a %s code=%d last=%d op0=%s\n", name, (int)r_, (int)l_, device_says(dev, n));     \
    } while (0)
    A_CALL("ptsz-stream-0", cudaMemcpyBatchAsync_ptsz(d, src, sz, 2, a, idx, 1, 0));
    A_CALL("ptsz-legacy-explicit", cudaMemcpyBatchAsync_ptsz(d, src, sz, 2, a, idx, 1, cudaStreamLegacy));
    A_CALL("ptsz-per-thread-stream", cudaMemcpyBatchAsync_ptsz(d, src, sz, 2, a, idx, 1, cudaStreamPerThread));
    A_CALL("ptsz-created-stream", cudaMemcpyBatchAsync_ptsz(d, src, sz, 2, a, idx, 1, s));
    {
        cudaMemcpy3DBatchOp op;
        memset(&op, 0, sizeof op);
        op.src.type = op.dst.type = cudaMemcpyOperandTypePointer;
        op.src.op.ptr.ptr = pin;
        op.dst.op.ptr.ptr = dev;
        op.extent = make_cudaExtent(n, 1, 1);
        op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        A_CALL("3d-stream-0", cudaMemcpy3DBatchAsync(1, &op, 0, 0));
        A_CALL("3d-per-thread-stream", cudaMemcpy3DBatchAsync(1, &op, 0, cudaStreamPerThread));
        A_CALL("3d-ptsz-stream-0", cudaMemcpy3DBatchAsync_ptsz(1, &op, 0, 0));
        A_CALL("3d-ptsz-per-thread-stream", cudaMemcpy3DBatchAsync_ptsz(1, &op, 0, cudaStreamPerThread));
        A_CALL("3d-created-stream", cudaMemcpy3DBatchAsync(1, &op, 0, s));
    }
    {
        void *dn[2] = { dev, nullptr };
        A("dst-null-second", dn, src, sz, 2, a, idx, 1, s);
    }
    {   // past the end of the allocation: pinned and pageable second operand
        char *small;
        cudaMalloc(&small, n / 2);
        void *dp[2] = { dev, small };
        A("past-allocation-pinned-second", dp, src, sz, 2, a, idx, 1, s);
        char *pag = (char *)malloc(n);
        memset(pag, 'A', n);
        const void *sp[2] = { pin, pag };
        A("past-allocation-pageable-second", dp, sp, sz, 2, a, idx, 1, s);
        // the driver's 12080 ABI: failIdx
        batch12_t f = nullptr;
        cudaDriverEntryPointQueryResult q;
        cudaGetDriverEntryPointByVersion("cuMemcpyBatchAsync", (void **)&f, 12080, cudaEnableDefault, &q);
        if (f) {
            CUdeviceptr dd[2] = { (CUdeviceptr)dev, (CUdeviceptr)small }, ss[2] = { (CUdeviceptr)pin, (CUdeviceptr)pag };
            size_t fi = 77;
            CUresult r = f(dd, ss, sz, 2, (CUmemcpyAttributes *)a, idx, 1, &fi, (CUstream)s);
            printf("a driver12080 past-allocation-pageable-second code=%d failIdx=%zu\n", (int)r, fi);
            fi = 77;
            r = f(dd, ss, sz, 0, (CUmemcpyAttributes *)a, idx, 1, &fi, (CUstream)s);
            printf("a driver12080 count0 code=%d failIdx=%zu\n", (int)r, fi);
            fi = 77;
            r = f(dd, ss, sz, 2, (CUmemcpyAttributes *)&bad0, idx, 1, &fi, (CUstream)s);
            printf("a driver12080 order0 code=%d failIdx=%zu\n", (int)r, fi);
            fi = 77;
            CUdeviceptr dz[2] = { (CUdeviceptr)dev, 0 };
            r = f(dz, ss, sz, 2, (CUmemcpyAttributes *)a, idx, 1, &fi, (CUstream)s);
            printf("a driver12080 dst-null-second code=%d failIdx=%zu\n", (int)r, fi);
            fi = 77;
            CUdeviceptr dg[2] = { (CUdeviceptr)dev, (CUdeviceptr)(dev + n) };
            r = f(dg, ss, sz, 2, (CUmemcpyAttributes *)a, idx, 1, &fi, (CUstream)s);
            printf("a driver12080 valid code=%d failIdx=%zu\n", (int)r, fi);
        } else {
            printf("a driver12080 not-found status=%d\n", (int)q);
        }
        cudaDeviceSynchronize();
        cudaGetLastError();
        free(pag);
    }
}

// One operand of n bytes, order o, behind a 100 ms kernel on s.
static void one(cudaStream_t s, size_t n, int o, bool h2d)
{
    char *dev, *pag = (char *)malloc(n);
    cudaMalloc(&dev, n);
    cudaMemcpyAttributes a = attr((cudaMemcpySrcAccessOrder)o);
    size_t idx = 0, sz = n;
    if (h2d) {
        memset(pag, 'A', n);
        cudaMemset(dev, 0, n);
    } else {
        memset(pag, 0, n);
        cudaMemset(dev, 'A', n);
    }
    cudaDeviceSynchronize();
    spin<<<1, 1, 0, s>>>(100 * cycles_per_ms);
    void *d = h2d ? (void *)dev : (void *)pag;
    const void *src = h2d ? (const void *)pag : (const void *)dev;
    double t0 = now_ms();
    cudaError_t r = cudaMemcpyBatchAsync(&d, &src, &sz, 1, &a, &idx, 1, s);
    double dt = now_ms() - t0;
    if (h2d) {
        memset(pag, 'Z', n);
        cudaStreamSynchronize(s);
        printf("%s h2d pageable %zuKiB order=%s code=%d call_ms=%.2f device=%s\n", "b", n >> 10, order_name(o),
               (int)r, dt, device_says(dev, n));
    } else {
        size_t there = 0;
        for (size_t i = 0; i < n; i++)
            there += pag[i] == 'A';
        cudaStreamSynchronize(s);
        printf("%s d2h pageable %zuKiB order=%s code=%d call_ms=%.2f data_at_return=%zu/%zu\n", "c", n >> 10,
               order_name(o), (int)r, dt, there, n);
    }
    cudaFree(dev);
    free(pag);
}

static void part_d(cudaStream_t s)
{
    const size_t n = 16u << 20;
    char *dev, *pin, *pag[3];
    cudaMalloc(&dev, 4 * n);
    cudaMallocHost(&pin, n);
    memset(pin, 'A', n);
    for (int i = 0; i < 3; i++) {
        pag[i] = (char *)malloc(n);
        memset(pag[i], 'A', n);
    }
    cudaMemset(dev, 0, 4 * n);
    cudaDeviceSynchronize();
    void *d[4] = { dev, dev + n, dev + 2 * n, dev + 3 * n };
    const void *src[4] = { pin, pag[0], pag[1], pag[2] };
    size_t sz[4] = { n, n, n, n }, idx[3] = { 0, 2, 3 };
    cudaMemcpyAttributes a[3] = { attr(cudaMemcpySrcAccessOrderStream), attr(cudaMemcpySrcAccessOrderDuringApiCall),
                                  attr(cudaMemcpySrcAccessOrderAny) };
    spin<<<1, 1, 0, s>>>(100 * cycles_per_ms);
    double t0 = now_ms();
    cudaError_t r = cudaMemcpyBatchAsync(d, src, sz, 4, a, idx, 3, s);
    double dt = now_ms() - t0;
    memset(pin, 'Z', n);
    for (int i = 0; i < 3; i++)
        memset(pag[i], 'Z', n);
    cudaStreamSynchronize(s);
    printf("d mixed 16MiB code=%d call_ms=%.2f pinned-Stream=%s pageable-Stream=%s", (int)r, dt, device_says(dev, n),
           device_says(dev + n, n));
    printf(" pageable-DuringApiCall=%s pageable-Any=%s\n", device_says(dev + 2 * n, n), device_says(dev + 3 * n, n));
}

int main()
{
    cudaStream_t s;
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    cycles_per_ms = khz ? khz : 1980000;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    printf("runtime=%d driver=%d cycles_per_ms=%lld\n", rt, drv, cycles_per_ms);
    part_a(s);
    for (int o = 1; o <= 3; o++)
        for (size_t n : { (size_t)64 << 10, (size_t)16 << 20 }) {
            one(s, n, o, true);
            one(s, n, o, false);
        }
    part_d(s);
    return 0;
}
