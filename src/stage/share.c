/* share.c - the copy threads and ring chunks of a staged copy (share.h).
 *
 * Without the node's share (PINCACHE_NODE_SHARE=off, or no file to be had:
 * node.h), a process uses what it always did: PINCACHE_STAGE_THREADS, or
 * min(16, its CPUs), divided among the processes a launcher says run on the
 * node (LOCAL_WORLD_SIZE, ...), at most 8 (PC_SHARE_PROC_CAP), and its whole
 * ring.  With it, that budget is
 * the node's, and each copy takes its share as node.c counts the ranks: the
 * launcher's count is not needed (the file counts the ranks that stage, on
 * which GPU).  The pool of copy threads grows to the largest share seen and
 * never shrinks; a copy takes its share of seats (stage_threads.h). */
#include "config.h"
#include <string.h>
#include <unistd.h>
#include "stage/share.h"
#include "stage/node.h"
#include "stage/plan.h"
#include "stage/ring.h"
#include "stage/stage_threads.h"
#include "stage/xfer_help.h"
#include "util/log.h"
#include "util/options.h"
#include "util/stats.h"

#define PC_SHARE_AUTO_THREADS 16     /* stage_threads.c's own default cap */

/* Guarded by the staging lock (pc_rings.lock), but for the fork child's
 * reset (single-threaded) and exit (leave only). */
static struct {
    int decided;             /* the first copy (or job) has decided */
    int joined;              /* sharing the node's budget */
    struct pc_node_budget budget;
    unsigned threads;        /* participants the next copy may use */
    unsigned share;          /* the share they come from (the node's policy, before the cap) */
    unsigned chunks;         /* ring chunks it may use (0: the whole ring) */
    struct pc_node_count count;
    unsigned char asked[PC_STAGE_MAX_DEV];   /* the device's PCI address asked */
    uint64_t gpu[PC_STAGE_MAX_DEV];          /* its key (pc_node_gpu_key); 0: unknown */
    uint64_t last_gpu;                       /* the key of the last copy's device */
} S;

static unsigned pc_share_node_cpus(void)
{
    long n = pc_opt.test_cpus > 0 ? pc_opt.test_cpus : sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static unsigned pc_share_min(unsigned a, unsigned b)
{
    return a < b ? a : b;
}

/* PINCACHE_STAGE_THREADS, or by default the CPUs shared among the processes
 * a launcher says run on this node (each has its own copy threads): two
 * torchrun ranks with 16 threads each on 16 CPUs staged at 2.8-4.9 GB/s on
 * the H200. */
static unsigned pc_share_alone(long *procs)
{
    long n;

    *procs = pc_env_local_procs();
    if (pc_opt.stage_threads > 0)
        return (unsigned)pc_opt.stage_threads;
    n = (long)pc_xfer_cpus() / (*procs > 1 ? *procs : 1);
    return n < 1 ? 1 : n > PC_SHARE_AUTO_THREADS ? PC_SHARE_AUTO_THREADS : (unsigned)n;
}

/* One process's copy threads, unless PINCACHE_STAGE_THREADS says: at most
 * 8 of the budget.  On the H200's host (16 CPUs) one process staged as
 * fast with 8 as with 16 at every size from 256K to 256M, both ways, from
 * warm and from fresh buffers, and the 1 MB pageable churn was cheaper
 * (0.075-0.079 ms per batch against 0.098-0.100, plainly 0.071-0.078):
 * every CPU that ran one of the process's threads takes part in the
 * TLB shoot-down of the program's next munmap (runs 64-65, docs/runs.md).
 * Processes that share a GPU's budget of 16 keep their shares (four: 4
 * each, run 63). */
#define PC_SHARE_PROC_CAP 8

/* Take a share: start or grow the pool to it. */
static void pc_share_set(unsigned threads, unsigned chunks)
{
    unsigned pool;

    S.share = threads;
    if (pc_opt.stage_threads == 0 && threads > PC_SHARE_PROC_CAP)
        threads = PC_SHARE_PROC_CAP;
    pool = pc_xfer_threads((long)threads, pc_opt.stage_linger);
    S.threads = pc_share_min(threads, pool);
    S.chunks = chunks;
}

static void pc_share_apply(struct pc_node_count c)
{
    struct pc_node_share sh = pc_node_policy(&S.budget, c);
    unsigned old = S.threads;

    /* Against the share last taken, not the threads it gave (a cap, a pool
     * that could not grow): only a new share is a change. */
    if (sh.threads != S.share || sh.chunks != S.chunks) {
        pc_share_set(sh.threads, sh.chunks);
        PC_GAUGE_ADD(node_threads, (int64_t)S.threads - (int64_t)old);
        if (old)
            PC_STAT_INC(node_share_changes);
        pc_node_note_threads(S.threads);
        pc_log(old ? PC_LOG_DEBUG : PC_LOG_INFO,
               "node share: %u copy threads, %u ring chunks (%u rank%s staging on this GPU, %u on the "
               "node; budget %u per GPU, %u per node)", S.threads, sh.chunks, c.gpu, c.gpu == 1 ? "" : "s",
               c.node, S.budget.gpu, S.budget.cpus);
    }
    if (c.gpu != S.count.gpu)
        PC_GAUGE_ADD(node_ranks, (int64_t)c.gpu - (int64_t)S.count.gpu);
    S.count = c;
}

static void pc_share_decide(void)
{
    long procs = 1;
    unsigned cpus;
    int st;

    S.decided = 1;
    st = pc_opt.node_share ? pc_node_join(pc_opt.node_share_dir) : PC_NODE_OFF;
    if (st == PC_NODE_REFUSED)
        PC_STAT_INC(node_refused);
    else if (st == PC_NODE_UNAVAILABLE)
        PC_STAT_INC(node_unavailable);
    if (st == PC_NODE_JOINED) {
        cpus = pc_share_node_cpus();
        S.joined = 1;
        S.budget.alone = pc_opt.stage_threads > 0 ? (unsigned)pc_opt.stage_threads
                                                  : pc_share_min(pc_xfer_cpus(), PC_SHARE_AUTO_THREADS);
        S.budget.gpu = pc_opt.stage_threads > 0 ? (unsigned)pc_opt.stage_threads
                                                : pc_share_min(cpus, PC_SHARE_AUTO_THREADS);
        S.budget.cpus = cpus > S.budget.gpu ? cpus : S.budget.gpu;
        S.budget.chunks = (unsigned)(pc_opt.stage_ring / pc_opt.stage_chunk);
        return;              /* the share: at the first count, right after (pc_share_tick) */
    }
    pc_share_set(pc_share_alone(&procs), 0);
    pc_log(PC_LOG_INFO, "staging with %u copy threads (%u CPUs, %ld process%s on this node)",
           S.threads, pc_xfer_cpus(), procs, procs == 1 ? "" : "es");
}

/* Device dev's key, asked once (a CUDA call; none pending: the caller's
 * copy is clean). */
static uint64_t pc_share_gpu(int dev)
{
    char id[32];

    if (dev < 0 || dev >= PC_STAGE_MAX_DEV)
        return 0;
    if (!S.asked[dev]) {
        S.asked[dev] = 1;
        memset(id, 0, sizeof id);
        if (PC_CALL_REAL(cudaDeviceGetPCIBusId, id, (int)sizeof id - 1, dev) == cudaSuccess)
            S.gpu[dev] = pc_node_gpu_key(id);
        else
            pc_clear_own_error();
    }
    return S.gpu[dev];
}

/* Joined: stamp this rank active on the last copy's GPU, and take the
 * share of a new count.  The first tick always counts, so the pool is never
 * started larger than the share (a rank joining a busy node); should it not
 * (the file left at exit meanwhile), the share of a rank alone. */
static void pc_share_tick(void)
{
    struct pc_node_count c;

    if (pc_node_tick(pc_now_ns(), S.last_gpu, &c) > 0)
        pc_share_apply(c);
    if (!S.threads)
        pc_share_apply((struct pc_node_count){ 1, 1 });
}

void pc_share_copy(int dev, unsigned *threads, unsigned *chunks)
{
    if (!S.decided)
        pc_share_decide();
    if (S.joined) {
        S.last_gpu = pc_share_gpu(dev);
        pc_share_tick();
    }
    *threads = S.threads;
    *chunks = S.chunks;
}

unsigned pc_share_threads(void)
{
    if (!S.decided)
        pc_share_decide();
    if (S.joined)
        pc_share_tick();     /* copy-thread work too: counted as staging */
    return S.threads;
}

int pc_share_parallel(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held, int wide)
{
    unsigned threads, extra = 0;

    /* Only ever try-locked (ring.h): a thread must not wait for another
     * thread's copy, which may wait for that thread's progress. */
    if (!lock_held && pthread_mutex_trylock(&pc_rings.lock) != 0)
        return 0;
    threads = pc_share_threads();
    if (wide && S.share > threads && n > threads)
        extra = (unsigned)(n < S.share ? n : S.share) - threads;
    pc_xfer_run(fn, arg, n, threads, extra);
    if (!lock_held)
        pthread_mutex_unlock(&pc_rings.lock);
    return 1;
}

void pc_share_at_exit(void)
{
    pc_node_leave();
}

void pc_share_after_fork_child(void)
{
    pc_node_after_fork_child();
    memset(&S, 0, sizeof S);
}
