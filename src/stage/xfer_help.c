/* xfer_help.c - jobs that are not copies on the copy threads, and on helpers
 * beyond the pool (xfer_help.h). */
#include "config.h"
#include <pthread.h>
#include <string.h>
#include "stage/xfer_help.h"
#include "stage/stage_threads.h"

/* pc_xfer_run's helpers beyond the pool (a fast block's pre-fault): threads
 * of their own, started once and parked between jobs, so that a copy never
 * wakes them (the pool's every thread wakes for a copy: H200 run 66).  They
 * are started before the job is handed out: a thread's start maps its
 * stack, which takes the address space's lock for writing, and waits behind
 * every pre-fault in flight (MADV_POPULATE_WRITE holds the lock for reading
 * over its whole chunk): threads started during the job (H200 run 70) only
 * joined it once the pool's first chunks were done, no faster than the
 * pool alone.  Jobs run one at a time (under the rings' lock: share.c).
 * E.tickets: the seats the current job offers them; E.busy: helpers that
 * took one and may still read the job, which the caller waits for. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct pc_xfer *job;     /* under mu */
    uint64_t gen;            /* under mu: jobs handed out */
    unsigned tickets;        /* under mu */
    unsigned busy;           /* atomic */
    unsigned threads;        /* under mu: helpers started */
    unsigned asked;          /* under mu: the most asked for */
} E = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0 };

static void *pc_xfer_extra_main(void *arg)
{
    uint64_t seen = 0;      /* the job that started it may be handed out already: the
                               tickets say whether one is open */
    struct pc_xfer *x;

    (void)arg;
#ifdef __GLIBC__
    pthread_setname_np(pthread_self(), "pincache-help");
#endif
    pthread_mutex_lock(&E.mu);
    for (;;) {
        while (E.gen == seen)
            pthread_cond_wait(&E.wake, &E.mu);
        seen = E.gen;
        x = NULL;
        if (E.tickets) {
            E.tickets--;
            x = E.job;
        }
        pthread_mutex_unlock(&E.mu);
        if (x) {
            while (pc_xfer_help(x))
                ;
            __atomic_sub_fetch(&E.busy, 1, __ATOMIC_RELEASE);
        }
        pthread_mutex_lock(&E.mu);
    }
    return NULL;
}

/* Hand x to up to extra helpers, starting those not yet there, before x
 * is handed to the pool; the number that may join (0: none). */
static unsigned pc_xfer_extra_begin(struct pc_xfer *x, unsigned extra)
{
    unsigned n;

    pthread_mutex_lock(&E.mu);
    if (extra > E.threads && extra > E.asked) {
        E.threads += pc_threads_start(pc_xfer_extra_main, extra - E.threads, PC_XFER_STACK);
        E.asked = extra;
    }
    n = extra < E.threads ? extra : E.threads;
    if (n) {
        E.job = x;
        E.tickets = n;
        __atomic_store_n(&E.busy, n, __ATOMIC_RELEASE);
        E.gen++;
        pthread_cond_broadcast(&E.wake);
    }
    pthread_mutex_unlock(&E.mu);
    return n;
}

/* Once every slice is done: the seats no helper took are withdrawn and
 * those taken are waited for. */
static void pc_xfer_extra_end(void)
{
    unsigned spins = 0;

    pthread_mutex_lock(&E.mu);
    __atomic_sub_fetch(&E.busy, E.tickets, __ATOMIC_RELEASE);
    E.tickets = 0;
    E.job = NULL;
    pthread_mutex_unlock(&E.mu);
    while (__atomic_load_n(&E.busy, __ATOMIC_ACQUIRE) != 0)
        pc_xfer_relax(&spins);
}

void pc_xfer_run(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, unsigned threads, unsigned extra)
{
    struct pc_xfer x;
    unsigned left = (unsigned)n, spins = 0, helpers = 0;
    char *none = NULL;

    if (n == 0)
        return;
    /* One slot whose counter counts the jobs down, every job one piece of
     * one slice, all ready at once. */
    memset(&x, 0, sizeof x);
    x.piece = 1;
    x.n = n;
    x.npieces = x.nfull = x.nslices = n;
    x.spp = 1;
    x.slot = &none;         /* never read: fn replaces the copy */
    x.left = &left;
    x.nslot = 1;
    x.ready = n;
    x.fn = fn;
    x.arg = arg;
    x.seats = threads > 1 ? threads - 1 : 0;
    pc_xfer_quiet();        /* the last copy's threads may still be leaving it */
    if (extra && n > 1)
        helpers = pc_xfer_extra_begin(&x, extra);
    pc_xfer_begin(&x);
    while (pc_xfer_help(&x))
        ;
    while (__atomic_load_n(&left, __ATOMIC_ACQUIRE) != 0)
        pc_xfer_relax(&spins);
    if (helpers)
        pc_xfer_extra_end();
    pc_xfer_end(&x, 0);
}

void pc_xfer_extra_after_fork_child(void)
{
    /* Only the forking thread exists in the child: no helper, and E.mu
     * may have been held by one. */
    pthread_mutex_init(&E.mu, NULL);
    pthread_cond_init(&E.wake, NULL);
    E.job = NULL;
    E.gen = 0;
    E.tickets = E.busy = E.threads = E.asked = 0;
}
