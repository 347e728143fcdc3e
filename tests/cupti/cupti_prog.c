/* cupti_prog - a CUDA program that also uses CUPTI, on the simulated device
 * and the fake libcupti (tests/doubles).  Run under the shim by
 * cupti.sh; prints TAP.  The first argument picks the scenario:
 *
 *   handover  PINCACHE_CUPTI=on: pincache takes nothing at start, enables
 *             activity kinds (no subscriber) at the first CUDA call, and
 *             when the program registers its own buffer callbacks it first
 *             flushes and disables, then forwards the program's call
 *   foreign   PINCACHE_CUPTI=on: the program subscribes before any CUDA call;
 *             pincache must then never touch CUPTI
 *   quiet     CUDA calls, then the program's CUPTI calls: pincache must make
 *             no CUPTI call at all (auto with another tool present; or off)
 *   refused   the fake refuses cuptiActivityEnable: nothing stays enabled
 *   attrib    PINCACHE_MODE=observe PINCACHE_CUPTI=on: a 100 ms "kernel", a
 *             cudaFreeHost that waits for it, an idle free; the records are
 *             made to match, and cupti.sh checks the report's numbers
 *   fork      a child of a process that enabled CUPTI: pincache makes no
 *             CUPTI call in it, not even at its exit
 *   start     CUDA calls, nothing else: cupti.sh reads from the fake's log
 *             which kinds pincache enabled (PINCACHE_TEST_CUPTI_KINDS) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "tap.h"
#include "../doubles/sim.h"
#include "../doubles/fake_cupti.h"

/* Under ASan: pincache keeps its cached blocks and, in a fork() child, the
 * parent's fences, by design; LeakSanitizer would fail the child's exit. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

#define K_CONCURRENT_KERNEL 10
#define K_KERNEL 3
#define K_MEMCPY 1
#define K_MEMSET 2

static void my_req(uint8_t **buf, size_t *size, size_t *max)
{
    static uint8_t mine[1 << 16] __attribute__((aligned(8)));

    *buf = mine;
    *size = sizeof mine;
    *max = 0;
}

static void my_comp(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
}

static struct fake_call log_[256];

static int calls(void)
{
    return fakeCuptiCalls(log_, 256);
}

/* How many calls in [from, to) pincache made, and of them to fn (NULL: any). */
static int count(int from, int to, int by_pincache, const char *fn, long long arg)
{
    int i, n = 0;

    for (i = from; i < to; i++)
        if (log_[i].by_pincache == by_pincache && (!fn || !strcmp(log_[i].fn, fn)) &&
            (arg < 0 || log_[i].arg == arg))
            n++;
    return n;
}

static void show(int from, int to)
{
    int i;

    for (i = from; i < to; i++)
        diag("  call %d: %s %s(%lld)", i, log_[i].by_pincache ? "pincache" : "program", log_[i].fn,
             log_[i].arg);
}

static int cuda_work(void)
{
    void *p = NULL;

    if (cudaHostAlloc(&p, 4096, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
        return -1;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

static void t_handover(void)
{
    int n0, n1, n2, n3, i, last_p = -1, first_a = -1;
    void *sub = NULL;

    ok(calls() == 0, "pincache makes no CUPTI call at start-up");
    ok(cuda_work() == 0, "CUDA calls work");
    n0 = calls();
    show(0, n0);
    ok(count(0, n0, 1, "cuptiActivityRegisterCallbacks", -1) == 1,
       "the first CUDA call made pincache register its buffer callbacks");
    ok(count(0, n0, 1, "cuptiActivityEnable", K_CONCURRENT_KERNEL) == 1 &&
       count(0, n0, 1, "cuptiActivityEnable", K_MEMCPY) == 1,
       "and enable concurrent-kernel and memcpy records");
    ok(count(0, n0, 1, "cuptiActivityEnable", K_KERNEL) == 0,
       "never the KERNEL kind, which serializes kernels");
    ok(count(0, n0, 1, "cuptiSubscribe", -1) == 0 && count(0, n0, 1, "cuptiSubscribe_v2", -1) == 0,
       "pincache takes no subscriber");

    is_int(cuptiActivityRegisterCallbacks(my_req, my_comp), 0, "the program registers its callbacks");
    n1 = calls();
    show(n0, n1);
    for (i = n0; i < n1; i++) {
        if (log_[i].by_pincache)
            last_p = i;
        else if (first_a < 0)
            first_a = i;
    }
    ok(count(n0, n1, 1, "cuptiActivityFlushAll", -1) >= 1, "hand-over: pincache flushed its buffers");
    ok(count(n0, n1, 1, "cuptiActivityDisable", K_CONCURRENT_KERNEL) == 1 &&
       count(n0, n1, 1, "cuptiActivityDisable", K_MEMCPY) == 1 &&
       count(n0, n1, 1, "cuptiActivityDisable", K_MEMSET) == 1,
       "hand-over: pincache disabled each kind it had enabled");
    ok(first_a >= 0 && last_p < first_a && !strcmp(log_[first_a].fn, "cuptiActivityRegisterCallbacks"),
       "then the program's call reached CUPTI, after pincache's");
    ok(fakeCuptiOwnsCallbacks((void *)my_req, (void *)my_comp), "the program's callbacks are registered");
    is_int((long long)fakeCuptiEnabled(), 0, "nothing of pincache's is left enabled");

    is_int(cuptiSubscribe(&sub, (void *)my_comp, NULL), 0, "the program can subscribe");
    is_int(cuptiActivityEnable(K_CONCURRENT_KERNEL), 0, "and enable its own kinds");
    n2 = calls();
    ok(cuda_work() == 0, "CUDA calls work after the hand-over");
    n3 = calls();
    ok(count(n1, n3, 1, NULL, -1) == 0, "pincache makes no CUPTI call after the hand-over");
    show(n2, n3);
}

static void t_foreign(void)
{
    void *sub = NULL;
    int n;

    is_int(cuptiSubscribe(&sub, (void *)my_comp, NULL), 0, "the program subscribes before any CUDA call");
    ok(cuda_work() == 0, "CUDA calls work");
    n = calls();
    show(0, n);
    ok(count(0, n, 1, NULL, -1) == 0, "pincache does not take CUPTI from the program");
    is_int(cuptiActivityRegisterCallbacks(my_req, my_comp), 0, "the program's Activity API calls work");
    n = calls();
    ok(count(0, n, 1, NULL, -1) == 0, "pincache still makes no CUPTI call");
}

static void t_quiet(void)
{
    int n;

    ok(cuda_work() == 0, "CUDA calls work");
    is_int(cuptiActivityRegisterCallbacks(my_req, my_comp), 0, "the program registers its callbacks");
    is_int(cuptiActivityEnable(K_CONCURRENT_KERNEL), 0, "and enables a kind");
    ok(cuda_work() == 0, "CUDA calls still work");
    n = calls();
    show(0, n);
    ok(count(0, n, 1, NULL, -1) == 0, "pincache made no CUPTI call");
    ok(fakeCuptiOwnsCallbacks((void *)my_req, (void *)my_comp), "the program's callbacks are registered");
}

static void t_refused(void)
{
    int n;

    ok(cuda_work() == 0, "CUDA calls work although CUPTI refused pincache");
    n = calls();
    show(0, n);
    ok(count(0, n, 1, "cuptiActivityEnable", -1) >= 1, "pincache tried");
    is_int((long long)fakeCuptiEnabled(), 0, "and left nothing enabled");
}

/* --- attrib --- */

static uint64_t mono_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t kernel_end;   /* written by the sim thread, read after the free */

static void kernel_done(void *arg)
{
    __atomic_store_n(&kernel_end, mono_ns(), __ATOMIC_RELEASE);
}

/* CUPTI's clock for a monotonic time. */
static uint64_t to_cupti(uint64_t mono)
{
    uint64_t m0 = mono_ns(), c = fakeCuptiNow(), m1 = mono_ns();

    return mono + c - (m0 + (m1 - m0) / 2);
}

#define KERNEL_US 100000u

static void t_attrib(void)
{
    void *p = NULL, *q = NULL;
    uint64_t t0, tf, t1, end, start;

    ok(cudaHostAlloc(&p, 1 << 20, 0) == cudaSuccess, "allocation (CUPTI starts after it)");
    t0 = mono_ns();
    ok(simLaunch(0, kernel_done, NULL, KERNEL_US) == cudaSuccess, "a 100 ms kernel");
    tf = mono_ns();
    ok(cudaFreeHost(p) == cudaSuccess, "cudaFreeHost while it runs");
    t1 = mono_ns();
    end = __atomic_load_n(&kernel_end, __ATOMIC_ACQUIRE);
    ok(end && end <= t1, "the free returned after the kernel ended");
    ok(t1 - t0 >= KERNEL_US * 1000ull * 9 / 10, "the free waited (%.1f ms)", (double)(t1 - t0) / 1e6);
    start = end - KERNEL_US * 1000ull;
    if (start < t0)
        start = t0;
    ok(fakeCuptiKernel(to_cupti(start), to_cupti(end), 7), "its kernel record");
    ok(fakeCuptiMemcpy(to_cupti(t0), to_cupti(t0 + 1000), 1 << 20, 1, 3, 7), "a pageable copy record");
    ok(fakeCuptiMemcpy(to_cupti(t0 + 2000), to_cupti(t0 + 3000), 2 << 20, 2, 3, 7), "a pinned copy record");
    /* An idle free: no GPU work around it. */
    ok(cudaHostAlloc(&q, 4096, 0) == cudaSuccess && cudaFreeHost(q) == cudaSuccess, "an idle free");
    /* The next GPU activity, 5 ms after the waited-for kernel ended. */
    ok(fakeCuptiKernel(to_cupti(mono_ns() + 5000000), to_cupti(mono_ns() + 6000000), 7),
       "a later kernel record");
    /* cupti.sh reads this: the stall pincache should report is the time from
     * the free's entry to the kernel's end, not to the free's return (which
     * a loaded machine delays). */
    printf("# entry-to-kernel-end-ns %llu\n", (unsigned long long)(end > tf ? end - tf : 0));
    printf("# kernel %.3f ms, free %.3f ms, kernel end to the later kernel %.3f ms\n",
           (double)(end - start) / 1e6, (double)(t1 - t0) / 1e6,
           (double)(mono_ns() + 5000000 - end) / 1e6);
}

static void t_fork(void)
{
    int n0, st = -1;
    pid_t pid;

    ok(cuda_work() == 0, "CUDA calls work");
    n0 = calls();
    ok(count(0, n0, 1, "cuptiActivityEnable", -1) >= 1, "pincache enabled CUPTI in the parent");
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        int n;
        cuptiActivityRegisterCallbacks(my_req, my_comp);
        cudaFreeHost(NULL);
        n = calls();
        exit(count(n0, n, 1, NULL, -1) == 0 ? 0 : 1);
    }
    ok(pid > 0 && waitpid(pid, &st, 0) == pid, "the child ran");
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "pincache made no CUPTI call in the child");
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";

    if (!strcmp(m, "handover"))
        t_handover();
    else if (!strcmp(m, "foreign"))
        t_foreign();
    else if (!strcmp(m, "quiet"))
        t_quiet();
    else if (!strcmp(m, "refused"))
        t_refused();
    else if (!strcmp(m, "attrib"))
        t_attrib();
    else if (!strcmp(m, "fork"))
        t_fork();
    else if (!strcmp(m, "start"))
        ok(cuda_work() == 0, "CUDA calls work");
    else {
        fprintf(stderr, "usage: cupti_prog handover|foreign|quiet|refused|attrib|fork|start\n");
        return 2;
    }
    return done_testing();
}
