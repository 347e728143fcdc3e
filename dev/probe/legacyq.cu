// legacyq.cu - what a query of the legacy default stream (stream 0) says
// while other streams are busy.  pincache's stream-by-stream fences
// (PINCACHE_FENCE=runtime or driver, and the fallback where the driver has
// no cuCtxRecordEvent) record an event on the legacy stream at every free,
// because an event recorded there covers the blocking streams and the
// per-thread ones; a query could stand in for that record only if "stream
// 0 idle" also said "every stream it waits for is idle".  This asks it:
// one stream (or another thread's per-thread stream) runs a spin kernel of
// SPIN_MS, then this thread asks cudaStreamQuery(0), cudaStreamQuery of
// cudaStreamLegacy, and an event recorded on stream 0 right then; each
// answer's code, and whether the device was still busy (the spin's own
// stream queried after).  One line per case; plainly, no pincache.
// Not a test.  Build: nvcc -O2 -arch=sm_90 -cudart shared -o legacyq legacyq.cu -lpthread
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__global__ void spin(long long ns)
{
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

static long long spin_ns;

static void ask(const char *what, cudaStream_t busy)
{
    cudaEvent_t e;
    int q0, ql, qe, qb;

    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    q0 = cudaStreamQuery(0);
    ql = cudaStreamQuery(cudaStreamLegacy);
    cudaEventRecord(e, 0);
    qe = cudaEventQuery(e);
    qb = busy == (cudaStream_t)-1 ? -1 : cudaStreamQuery(busy);
    printf("%-40s query(0) %3d  query(legacy) %3d  event on 0 %3d  busy stream %3d\n", what, q0, ql, qe, qb);
    cudaDeviceSynchronize();
    cudaEventDestroy(e);
}

static void *other_ptsz(void *arg)
{
    (void)arg;
    cudaSetDevice(0);
    spin<<<1, 1, 0, cudaStreamPerThread>>>(spin_ns);
    return NULL;
}

int main(int argc, char **argv)
{
    cudaStream_t blk, nb;
    pthread_t t;

    spin_ns = (long long)((argc > 1 ? atof(argv[1]) : 50) * 1e6);
    cudaSetDevice(0);
    cudaFree(0);
    cudaStreamCreate(&blk);
    cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking);

    spin<<<1, 1>>>(spin_ns);
    ask("spin on stream 0 (control)", 0);
    spin<<<1, 1, 0, blk>>>(spin_ns);
    ask("spin on a blocking stream", blk);
    spin<<<1, 1, 0, nb>>>(spin_ns);
    ask("spin on a non-blocking stream", nb);
    spin<<<1, 1, 0, cudaStreamPerThread>>>(spin_ns);
    ask("spin on this thread's per-thread stream", cudaStreamPerThread);
    pthread_create(&t, NULL, other_ptsz, NULL);
    pthread_join(t, NULL);
    ask("spin on another thread's per-thread", (cudaStream_t)-1);
    spin<<<1, 1, 0, blk>>>(spin_ns);
    cudaStreamSynchronize(0);
    ask("blocking spin, then sync of stream 0", blk);
    printf("last error %d\n", (int)cudaGetLastError());
    return 0;
}
