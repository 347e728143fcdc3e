/* trailrec - a cudaStreamQuery right after its thread synchronized its own
 * non-blocking stream answers cudaSuccess, though another thread's free was
 * fenced while that stream was busy (pincache(7) CAVEATS: an event a fence
 * recorded on the stream would trail the work the wait was for).  Thread B,
 * ROUNDS times: a 3 ms "kernel" on its non-blocking stream,
 * cudaStreamSynchronize, cudaStreamQuery.  The main thread, while B waits:
 * a pinned block allocated and freed (a cached free fences the busy
 * stream).  Exit status 0 when every query answered 0, 1 when some did not
 * (the count on stderr), 2 when a call failed. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "simtest.h"

#define ROUNDS 40

static pthread_barrier_t bar;
static int failed, late;

static void *waiter(void *arg)
{
    cudaStream_t s;

    (void)arg;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        failed = 1;
    for (int i = 0; i < ROUNDS; i++) {
        if (!failed && simLaunch(s, simtest_nop, NULL, 3000) != cudaSuccess)
            failed = 1;
        pthread_barrier_wait(&bar);
        if (!failed && cudaStreamSynchronize(s) != cudaSuccess)
            failed = 1;
        if (!failed && cudaStreamQuery(s) != cudaSuccess)
            late++;
        pthread_barrier_wait(&bar);
    }
    if (!failed && cudaStreamDestroy(s) != cudaSuccess)
        failed = 1;
    return NULL;
}

int main(void)
{
    pthread_t t;
    void *p;

    if (cudaFree(0) != cudaSuccess)
        return 2;
    pthread_barrier_init(&bar, NULL, 2);
    if (pthread_create(&t, NULL, waiter, NULL) != 0)
        return 2;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&bar);
        usleep(500);             /* the waiter is in its sync by now */
        if (cudaHostAlloc(&p, 65536, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
            failed = 1;
        pthread_barrier_wait(&bar);
    }
    pthread_join(t, NULL);
    if (failed)
        return 2;
    if (late) {
        fprintf(stderr, "trailrec: %d of %d queries right after a sync answered not ready\n", late, ROUNDS);
        return 1;
    }
    return 0;
}
