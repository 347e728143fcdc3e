// trailrec.cu - can a program see an event that another thread recorded on
// its stream while it waited?  pincache's stream-by-stream fences
// (PINCACHE_FENCE=runtime or driver, and the fallback where the driver has
// no cuCtxRecordEvent) query a program's non-blocking stream and, finding
// it busy, record an event on it; the program's own wait may have begun
// before that record, so it returns with the record still behind its work.
// This asks how often cudaStreamQuery, right after the wait returns, then
// answers cudaErrorNotReady (plainly: never).  Thread A launches a spin
// kernel of SPIN_US on stream s, releases thread B and waits (stream sync,
// event sync of its own event recorded after the kernel, or device sync);
// B queries s (busy) and records an event on it, after DELAY_US of the
// kernel's time; A then queries s.  One line per case: rounds, how many
// queries said not ready, how many of B's queries found s busy.
// Not a test.  Build: nvcc -O2 -arch=sm_90 -cudart shared -o trailrec trailrec.cu -lpthread
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <atomic>

__global__ void spin(long long ns)
{
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static cudaStream_t S;
static cudaEvent_t EB;
static std::atomic<int> go{0}, done{0};
static std::atomic<double> t_launch{0};
static double delay_us;
static int b_busy;

static void *thread_b(void *)
{
    cudaSetDevice(0);
    for (;;) {
        int g;
        while ((g = go.load()) == 0)
            ;
        if (g < 0)
            return NULL;
        while (now_us() - t_launch.load() < delay_us)
            ;
        if (cudaStreamQuery(S) == cudaErrorNotReady) {
            b_busy++;
            cudaEventRecord(EB, S);
        }
        go.store(0);
        done.store(1);
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    double spin_us = argc > 2 ? atof(argv[2]) : 100;
    const double delays[] = {0, 0.5, 0.9, 0.97, 1.0};
    const char *how[] = {"stream-sync", "event-sync", "device-sync", "none"};
    cudaEvent_t ea;
    pthread_t tb;

    cudaSetDevice(0);
    cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&EB, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&ea, cudaEventDisableTiming);
    spin<<<1, 1, 0, S>>>(1000);
    cudaDeviceSynchronize();
    pthread_create(&tb, NULL, thread_b, NULL);
    for (int h = 0; h < 4; h++)
        for (double d : delays) {
            if (h == 3 && d != delays[0])
                break;           /* the baseline: B takes no part, one case is enough */
            int notready = 0, errs = 0;
            b_busy = 0;
            delay_us = d * spin_us;
            for (int r = 0; r < rounds; r++) {
                done.store(0);
                spin<<<1, 1, 0, S>>>((long long)(spin_us * 1000));
                if (h == 1)
                    cudaEventRecord(ea, S);
                t_launch.store(now_us());
                if (h != 3)
                    go.store(1);
                cudaError_t w = h == 0 ? cudaStreamSynchronize(S)
                              : h == 1 ? cudaEventSynchronize(ea)
                              : h == 2 ? cudaDeviceSynchronize() : cudaStreamSynchronize(S);
                cudaError_t q = cudaStreamQuery(S);
                errs += w != cudaSuccess;
                notready += q == cudaErrorNotReady;
                if (h != 3)
                    while (!done.load())
                        ;
                cudaStreamSynchronize(S);
            }
            printf("%-11s spin %6.1f us, B at %5.1f us: rounds %d, A's query not ready %d, B found busy %d, errors %d\n",
                   how[h], spin_us, delay_us, rounds, notready, b_busy, errs);
            fflush(stdout);
        }
    go.store(-1);
    pthread_join(tb, NULL);
    return 0;
}
