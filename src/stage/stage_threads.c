/* stage_threads.c - the persistent copy threads behind pageable-copy staging
 * (see stage_threads.h).  No CUDA: only the calling thread talks to the
 * runtime, because cudaStreamPerThread and the current device are per thread.
 *
 * One memcpy thread moves 8.9 GB/s into pinned memory, 16 move 51 (measured
 * on the H200 host); the ring's DMA runs at 55.  So the copy threads, not the
 * DMA, set the staged bandwidth, and they must never be created per copy. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "stage/stage_threads.h"
#include "util/log.h"
#include "util/options.h"
#include "util/limits.h"

#define PC_XFER_MAX_THREADS 64
#define PC_XFER_AUTO_THREADS 16
#define PC_XFER_SPIN_NS 50000           /* spin this long for the next piece (a 4M DMA takes 76 us) before sleeping */

/* Joining and leaving a transfer takes no lock.  A pool thread counts
 * itself in active, then reads job; pc_xfer_end clears job, then waits for
 * active to reach 0 (or, when the transfer is done, leaves that wait to the
 * next pc_xfer_init) (both sequentially consistent: either the thread sees
 * NULL, or the caller sees it counted).  A lock here put every copy behind
 * a convoy: 15 threads that woke together queued on one mutex, each handing
 * it to the next through a futex wake-up, on the way in and on the way out.
 * T.mu is only the lock of the two condition variables, for threads that
 * sleep; sleepers (counted before they look a last time under T.mu) tell
 * the caller whether anyone needs a signal. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;    /* gen moved: a transfer was handed out */
    pthread_cond_t more;    /* the current transfer's ready or stop moved */
    struct pc_xfer *job;    /* atomic: the transfer being worked on, or NULL */
    uint64_t gen;           /* atomic: transfers handed out */
    unsigned active;        /* atomic: pool threads that may be inside job */
    unsigned wake_sleepers; /* atomic: threads asleep (or going to sleep) on wake */
    unsigned more_sleepers; /* atomic: threads asleep (or going to sleep) on more */
    unsigned threads;       /* atomic: participants, the caller included; 0: not started
                               (grows under T.mu, never shrinks) */
    uint64_t linger_ns;     /* atomic: spin this long for the next transfer... */
    uint64_t gap_ns;        /* atomic: ...when the last one came this soon after the one before */
    uint64_t last_end_ns;   /* when the last transfer ended (the caller's: one at a time) */
    unsigned asked;         /* the most participants asked for (under T.mu): a pool that could
                               not be made that large is not tried again for as many */
} T = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
        NULL, 0, 0, 0, 0, 0, 0, UINT64_MAX, 0, 0 };

static inline void pc_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static uint64_t pc_xfer_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* One step of a bounded spin that started at t0: pause, and every 256 steps
 * look at the clock (1: limit_ns is up) and yield, so that a spinning copy
 * thread never keeps the caller or the program off a CPU. */
static int pc_spin_expired(unsigned *n, uint64_t t0, uint64_t limit_ns)
{
    pc_cpu_relax();
    if ((++*n & 255) != 0)
        return 0;
    if (pc_xfer_now() - t0 >= limit_ns)
        return 1;
    sched_yield();
    return 0;
}

void pc_xfer_relax(unsigned *spins)
{
    /* Yield after a while: with more threads than CPUs, spinning would
     * starve the very thread we wait for. */
    if (++*spins < 256) {
        for (int i = 0; i < 32; i++)
            pc_cpu_relax();
    } else {
        sched_yield();
    }
}

/* 1: claimed slice *i; 0: nothing claimable until ready moves past *seen;
 * -1: nothing left to claim. */
static int pc_xfer_claim(struct pc_xfer *x, uint64_t *i, uint64_t *seen)
{
    uint64_t next = __atomic_load_n(&x->next, __ATOMIC_RELAXED), ready;

    for (;;) {
        if (__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE) || next >= x->nslices)
            return -1;
        /* Acquire: the slot is free (H2D) or holds the DMA's data (D2H). */
        ready = __atomic_load_n(&x->ready, __ATOMIC_ACQUIRE);
        if (next / x->spp >= ready) {
            *seen = ready;
            return 0;
        }
        if (__atomic_compare_exchange_n(&x->next, &next, next + 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            *i = next;
            return 1;
        }
    }
}

int pc_xfer_help(struct pc_xfer *x)
{
    uint64_t i, seen;

    if (pc_xfer_claim(x, &i, &seen) != 1)
        return 0;
    pc_xfer_copy_slice(x, i);
    return 1;
}

int pc_xfer_piece_done(const struct pc_xfer *x, uint64_t k)
{
    return __atomic_load_n(&x->left[pc_xfer_slot(x, k)], __ATOMIC_ACQUIRE) == 0;
}

/* After the caller moved ready or stop (sequentially consistent): wake the
 * threads that sleep on more, if any do. */
static void pc_xfer_wake_more(void)
{
    if (__atomic_load_n(&T.more_sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&T.mu);
        pthread_cond_broadcast(&T.more);
        pthread_mutex_unlock(&T.mu);
    }
}

void pc_xfer_ready(struct pc_xfer *x, uint64_t ready)
{
    uint64_t k = __atomic_load_n(&x->ready, __ATOMIC_RELAXED);   /* only the caller writes it */

    if (ready > x->npieces)
        ready = x->npieces;
    if (ready <= k)
        return;
    for (; k < ready; k++)
        __atomic_store_n(&x->left[pc_xfer_slot(x, k)], x->spp, __ATOMIC_RELAXED);
    __atomic_store_n(&x->ready, ready, __ATOMIC_SEQ_CST);
    pc_xfer_wake_more();
}

/* A pool thread found nothing to claim: spin briefly (the next piece is
 * usually one DMA away), then sleep until the caller moves ready or stops. */
static void pc_xfer_wait(struct pc_xfer *x, uint64_t seen)
{
    uint64_t t0 = pc_xfer_now();
    unsigned n = 0;

    while (__atomic_load_n(&x->ready, __ATOMIC_ACQUIRE) == seen &&
           !__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
        if (!pc_spin_expired(&n, t0, PC_XFER_SPIN_NS))
            continue;
        __atomic_add_fetch(&T.more_sleepers, 1, __ATOMIC_SEQ_CST);
        pthread_mutex_lock(&T.mu);
        while (__atomic_load_n(&x->ready, __ATOMIC_SEQ_CST) == seen &&
               !__atomic_load_n(&x->stop, __ATOMIC_SEQ_CST))
            pthread_cond_wait(&T.more, &T.mu);
        pthread_mutex_unlock(&T.mu);
        __atomic_sub_fetch(&T.more_sleepers, 1, __ATOMIC_RELEASE);
        return;
    }
}

static void pc_xfer_work(struct pc_xfer *x)
{
    uint64_t i, seen;
    int r;

    while ((r = pc_xfer_claim(x, &i, &seen)) >= 0) {
        if (r)
            pc_xfer_copy_slice(x, i);
        else
            pc_xfer_wait(x, seen);
    }
}

/* Take one of x's seats (its share of helpers); 0: none left. */
static int pc_xfer_seat(struct pc_xfer *x)
{
    unsigned s = __atomic_load_n(&x->seats, __ATOMIC_RELAXED);

    while (s > 0)
        if (__atomic_compare_exchange_n(&x->seats, &s, s - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            return 1;
    return 0;
}

static void *pc_xfer_main(void *arg)
{
    uint64_t seen = 0;
    struct pc_xfer *x;
    int worked = 0;          /* had a seat in the last transfer */

    (void)arg;
#ifdef __GLIBC__
    pthread_setname_np(pthread_self(), "pincache-copy");
#endif
    for (;;) {
        uint64_t linger = __atomic_load_n(&T.linger_ns, __ATOMIC_RELAXED);
        if (__atomic_load_n(&T.gen, __ATOMIC_ACQUIRE) == seen && linger && worked &&
            __atomic_load_n(&T.gap_ns, __ATOMIC_RELAXED) <= linger) {
            /* Copies are coming back to back: the next one finds this thread
             * awake, with no futex wake-up and no scheduler latency.  A
             * program that copies now and then never pays for the spin, nor
             * does a thread the share left out (it would only take a CPU
             * from another process of the node). */
            uint64_t t0 = pc_xfer_now();
            unsigned n = 0;
            while (__atomic_load_n(&T.gen, __ATOMIC_ACQUIRE) == seen && !pc_spin_expired(&n, t0, linger))
                ;
        }
        if (__atomic_load_n(&T.gen, __ATOMIC_ACQUIRE) == seen) {
            __atomic_add_fetch(&T.wake_sleepers, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_lock(&T.mu);
            while (__atomic_load_n(&T.gen, __ATOMIC_SEQ_CST) == seen)
                pthread_cond_wait(&T.wake, &T.mu);
            pthread_mutex_unlock(&T.mu);
            __atomic_sub_fetch(&T.wake_sleepers, 1, __ATOMIC_RELEASE);
        }
        seen = __atomic_load_n(&T.gen, __ATOMIC_ACQUIRE);
        /* Counted first, then the job: see T.  x stays valid while counted. */
        __atomic_add_fetch(&T.active, 1, __ATOMIC_SEQ_CST);
        x = __atomic_load_n(&T.job, __ATOMIC_SEQ_CST);
        worked = x && pc_xfer_seat(x);
        if (worked)
            pc_xfer_work(x);
        __atomic_sub_fetch(&T.active, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

unsigned pc_xfer_cpus(void)
{
    cpu_set_t set;
    long n;

    if (pc_opt.test_cpus > 0)
        return (unsigned)pc_opt.test_cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* At most the tasks a limit spares (util/limits.h), asked at each start: the
 * program's threads and processes count against it as ours do. */
static unsigned pc_threads_spared(unsigned n)
{
    long h = pc_limits_tasks(pc_opt.test_limits_root), spare = pc_limits_tasks_spare(h);

    if (spare >= (long)n)
        return n;
    pc_info("a task limit (pids.max or RLIMIT_NPROC) leaves %ld more tasks: starting %ld of %u "
            "threads, to leave the program the rest", h, spare, n);
    return (unsigned)spare;
}

unsigned pc_threads_start(void *(*fn)(void *), unsigned n, size_t stack)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    unsigned made = 0;
    int saved = errno;

    /* Detached, so exit never waits for them; no signals, so the program's
     * handlers never run on a thread it did not create, but for those a
     * fault raises on the faulting thread.  Copy threads touch the
     * program's memory, and its SIGSEGV handler may be what opens a page
     * (dirty tracking, a garbage collector): plainly it ran on the thread
     * inside the runtime's copy.  Blocked, such a fault would kill the
     * process, the kernel setting the handler back to the default. */
    if (n == 0 || (n = pc_threads_spared(n)) == 0 || pthread_attr_init(&attr) != 0) {
        errno = saved;
        return 0;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, stack);
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGTRAP);
    sigdelset(&all, SIGSYS);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* The first refusal (EAGAIN: a limit met after all) ends it, and its
     * errno (glibc's clone leaves it) is not the program's. */
    while (made < n && pthread_create(&t, &attr, fn, NULL) == 0)
        made++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    errno = saved;
    return made;
}

unsigned pc_xfer_threads(long want, long linger_us)
{
    unsigned n, have;

    __atomic_store_n(&T.linger_ns, (uint64_t)linger_us * 1000u, __ATOMIC_RELAXED);
    if (want > 0) {
        n = want > PC_XFER_MAX_THREADS ? PC_XFER_MAX_THREADS : (unsigned)want;
    } else {
        n = pc_xfer_cpus();
        if (n > PC_XFER_AUTO_THREADS)
            n = PC_XFER_AUTO_THREADS;
    }
    have = __atomic_load_n(&T.threads, __ATOMIC_ACQUIRE);
    if (have && (have >= n || T.asked >= n))
        return have;         /* enough, or more were asked for and could not be made */
    pthread_mutex_lock(&T.mu);
    have = T.threads ? T.threads : 1;
    if (n > have && n > T.asked) {
        /* fewer is fine: the caller copies too */
        have += pc_threads_start(pc_xfer_main, n - have, PC_XFER_STACK);
        T.asked = n;
    }
    __atomic_store_n(&T.threads, have, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&T.mu);
    return have;
}

void pc_xfer_begin(struct pc_xfer *x)
{
    unsigned threads, seats;

    if (x->nslices < 2)
        return;
    if (T.last_end_ns) {
        uint64_t now = pc_xfer_now();
        __atomic_store_n(&T.gap_ns, now > T.last_end_ns ? now - T.last_end_ns : 0, __ATOMIC_RELAXED);
    }
    threads = __atomic_load_n(&T.threads, __ATOMIC_ACQUIRE);
    seats = x->seats;        /* not yet shared: no pool thread has seen x */
    if (threads > 1 && seats) {
        /* The job before the generation: a thread that sees the new
         * generation finds this job (or NULL, once it has ended). */
        __atomic_store_n(&T.job, x, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&T.gen, 1, __ATOMIC_SEQ_CST);   /* lingering threads spin on it */
        if (__atomic_load_n(&T.wake_sleepers, __ATOMIC_SEQ_CST)) {
            /* Wake only as many threads as there are slices for the others
             * and seats for them: waking 15 threads for a 512K copy costs
             * more than it saves. */
            uint64_t want = x->nslices - 1 < seats ? x->nslices - 1 : seats;
            pthread_mutex_lock(&T.mu);
            if (want >= threads - 1) {
                pthread_cond_broadcast(&T.wake);
            } else {
                for (uint64_t i = 0; i < want; i++)
                    pthread_cond_signal(&T.wake);
            }
            pthread_mutex_unlock(&T.mu);
        }
    }
}

void pc_xfer_quiet(void)
{
    unsigned spins = 0;

    while (__atomic_load_n(&T.active, __ATOMIC_SEQ_CST) != 0)
        pc_xfer_relax(&spins);
}

void pc_xfer_end(struct pc_xfer *x, int done)
{

    __atomic_store_n(&x->stop, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&T.job, __ATOMIC_RELAXED) != x)
        return;              /* never handed out (one participant, or one slice) */
    T.last_end_ns = pc_xfer_now();
    __atomic_store_n(&T.job, NULL, __ATOMIC_SEQ_CST);
    pc_xfer_wake_more();
    /* Every slice is claimed by now (or stop holds them back): a thread still
     * counted is finishing one slice, or (done) reading x on its way out,
     * which the next pc_xfer_init waits for. */
    if (!done)
        pc_xfer_quiet();
}

void pc_xfer_after_fork_child(void)
{
    /* Only the forking thread exists in the child; T.mu may have been held
     * by a copy thread.  Start over; the next use (if any) makes threads. */
    pthread_mutex_init(&T.mu, NULL);
    pthread_cond_init(&T.wake, NULL);
    pthread_cond_init(&T.more, NULL);
    T.job = NULL;
    T.gen = 0;
    T.active = 0;
    T.wake_sleepers = 0;
    T.more_sleepers = 0;
    T.threads = 0;
    T.asked = 0;
    T.gap_ns = UINT64_MAX;
    T.last_end_ns = 0;
}
