/* node.c - the node's share of staging: this process's slot in the node's
 * file, the count of active ranks, the policy (node.h says why; the file
 * itself is nodeseg.c's).  CUDA-free.
 *
 * N is used under the staging lock (join, tick), at exit (leave, racing at
 * most a copy still running on another thread: it may stamp the freed slot
 * once, which only makes that slot look active for a second) and in a fork
 * child (single-threaded). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "stage/node.h"
#include "stage/nodeseg.h"
#include "util/log.h"

#define PC_NODE_STAMP_NS 1000000ull          /* the slot's time is stored at most once a millisecond */

static struct {
    int state;                   /* PC_NODE_*: OFF until join decided */
    struct pc_nodeseg seg;
    unsigned idx;                /* our slot */
    uint64_t token;              /* our slot's token */
    uint64_t gpu;                /* the GPU our slot names */
    uint64_t gen;                /* the file's generation at our last count */
    uint64_t next_ns;            /* count again at the latest then */
    struct pc_node_count count;  /* the last count */
} N = { .seg = { .fd = -1 } };

struct pc_node_share pc_node_policy(const struct pc_node_budget *b, struct pc_node_count c)
{
    struct pc_node_share s;
    unsigned g = c.gpu ? c.gpu : 1, n = c.node ? c.node : 1, t, min_chunks;

    t = b->alone;
    if (b->gpu / g < t)
        t = b->gpu / g;
    if (b->cpus / n < t)
        t = b->cpus / n;
    s.threads = t ? t : 1;
    /* Two chunks: one filling while the other's DMA runs (options.c's
     * minimum of a ring), unless the ring itself is smaller. */
    min_chunks = b->chunks < 2 ? b->chunks : 2;
    s.chunks = b->chunks / g > min_chunks ? b->chunks / g : min_chunks;
    return s;
}

/* "DDDD:BB:DD.F" (hex; the domain may be 4 or 8 digits): one 64-bit key,
 * never 0. */
uint64_t pc_node_gpu_key(const char *id)
{
    unsigned long long part[4] = { 0 };
    static const char seps[3] = { ':', ':', '.' };
    unsigned k = 0;

    if (!id)
        return 0;
    for (;;) {
        unsigned digits = 0;
        for (; digits < 8; id++, digits++) {
            char ch = *id;
            unsigned v = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0')
                       : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                       : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10) : 16u;
            if (v == 16)
                break;
            part[k] = part[k] * 16 + v;
        }
        if (digits == 0)
            return 0;
        if (k == 3)
            break;
        if (*id != seps[k])
            return 0;
        id++;
        k++;
    }
    if (*id || part[1] > 0xff || part[2] > 0x1f || part[3] > 7)
        return 0;
    return 1 + (part[0] << 16 | part[1] << 8 | part[2] << 3 | part[3]);
}

static uint64_t pc_node_token(void)
{
    uint64_t t = 0;
    struct timespec ts;

    if (getrandom(&t, sizeof t, GRND_NONBLOCK) != (ssize_t)sizeof t || t == 0) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)(uintptr_t)&ts;
        t = (t ^ (t >> 30)) * 0xbf58476d1ce4e5b9ull;
        t ^= t >> 31;
    }
    return t ? t : 1;
}

static void pc_node_bump(void)
{
    __atomic_add_fetch(&N.seg.map->gen, 1, __ATOMIC_SEQ_CST);
}

/* Alone in the file (no other member): every slot is a dead process's, or
 * free.  Start over.  0 when we were not alone. */
static int pc_node_reset_if_alone(void)
{
    struct pc_node_file *f = N.seg.map;

    if (pc_nodeseg_lock(&N.seg, F_WRLCK, 0, PC_NODE_LOCK_ALL) != 0)
        return 0;
    for (unsigned i = 0; i < PC_NODE_SLOTS; i++) {
        struct pc_node_slot *s = &f->slot[i];
        __atomic_store_n(&s->last_ns, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->gpu, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->threads, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&s->token, 0, __ATOMIC_RELEASE);
    }
    pc_node_bump();
    /* Back to a member's read lock (atomically: nobody slips in between). */
    pc_nodeseg_lock(&N.seg, F_RDLCK, PC_NODE_LOCK_PRESENT, 1);
    pc_nodeseg_lock(&N.seg, F_UNLCK, PC_NODE_LOCK_SLOT(0), PC_NODE_SLOTS);
    return 1;
}

int pc_node_join(const char *dir)
{
    static int warned;
    const char *why = NULL;
    int st, saved = errno;   /* a copy that stages leaves no trace of the file's making */

    if (N.state != PC_NODE_OFF)
        return N.state;
    st = pc_nodeseg_open(dir, &N.seg, &why);
    if (st == PC_NODE_JOINED) {
        pc_node_reset_if_alone();
        st = PC_NODE_UNAVAILABLE;
        why = "all its slots are taken";
        for (unsigned i = 0; i < PC_NODE_SLOTS; i++) {
            struct pc_node_slot *s = &N.seg.map->slot[i];
            if (pc_nodeseg_lock(&N.seg, F_WRLCK, PC_NODE_LOCK_SLOT(i), 1) != 0)
                continue;    /* a live process's */
            N.idx = i;
            N.token = pc_node_token();
            __atomic_store_n(&s->last_ns, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->gpu, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->threads, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&s->pid, (uint64_t)getpid(), __ATOMIC_RELAXED);
            __atomic_store_n(&s->token, N.token, __ATOMIC_SEQ_CST);
            pc_node_bump();
            N.gen = 0;
            N.gpu = 0;
            st = PC_NODE_JOINED;
            break;
        }
        if (st != PC_NODE_JOINED) {
            close(N.seg.fd);         /* drops the read lock */
            munmap(N.seg.map, sizeof *N.seg.map);
            N.seg.fd = -1;
            N.seg.map = NULL;
        }
    }
    N.state = st;
    if (st == PC_NODE_REFUSED)
        pc_log_once(&warned, PC_LOG_WARN, "node share: %s refused (%s); staging with this process's own "
                    "budget", N.seg.path, why);
    else if (st == PC_NODE_UNAVAILABLE)
        pc_info("node share: no shared file in %s (%s); staging with this process's own budget",
                dir ? dir : "(none)", why);
    errno = saved;
    return st;
}

/* Is the time t (another process's stamp) within the last second of now?
 * Bounded both ways: a stamp from the future (another clock, a bad value)
 * counts only within a second of now too. */
static int pc_node_recent(uint64_t t, uint64_t now)
{
    if (t == 0)
        return 0;
    return t <= now ? now - t < PC_NODE_ACTIVE_NS : t - now < PC_NODE_ACTIVE_NS;
}

static void pc_node_count_now(uint64_t now, uint64_t gpu, struct pc_node_count *c)
{
    struct pc_node_file *f = N.seg.map;

    c->gpu = c->node = 1;
    for (unsigned i = 0; i < PC_NODE_SLOTS; i++) {
        struct pc_node_slot *s = &f->slot[i];
        uint64_t tok;

        if (i == N.idx)
            continue;
        tok = __atomic_load_n(&s->token, __ATOMIC_ACQUIRE);
        if (!tok || !pc_node_recent(__atomic_load_n(&s->last_ns, __ATOMIC_RELAXED), now))
            continue;
        /* Active by its stamp; alive only if its lock is held. */
        if (pc_nodeseg_held(&N.seg, PC_NODE_LOCK_SLOT(i)) == 0) {
            if (__atomic_compare_exchange_n(&s->token, &tok, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
                pc_node_bump();
            continue;
        }
        c->node++;
        if (gpu && __atomic_load_n(&s->gpu, __ATOMIC_RELAXED) == gpu)
            c->gpu++;
    }
}

int pc_node_tick(uint64_t now, uint64_t gpu, struct pc_node_count *c)
{
    struct pc_node_slot *me;
    uint64_t last, g;
    int moved = 0;

    if (N.state != PC_NODE_JOINED)
        return -1;
    me = &N.seg.map->slot[N.idx];
    last = __atomic_load_n(&me->last_ns, __ATOMIC_RELAXED);
    if (!last || last > now || now - last >= PC_NODE_ACTIVE_NS)
        moved = 1;           /* waking: the others count us from now on */
    if (moved || now - last >= PC_NODE_STAMP_NS)
        __atomic_store_n(&me->last_ns, now, __ATOMIC_RELAXED);
    if (gpu != N.gpu) {
        __atomic_store_n(&me->gpu, gpu, __ATOMIC_RELAXED);
        N.gpu = gpu;
        moved = 1;
    }
    if (__atomic_load_n(&me->token, __ATOMIC_RELAXED) != N.token) {
        /* Cleared, though we hold its lock (a reaper fooled, a bad write):
         * ours again. */
        __atomic_store_n(&me->token, N.token, __ATOMIC_SEQ_CST);
        moved = 1;
    }
    if (moved)
        pc_node_bump();
    g = __atomic_load_n(&N.seg.map->gen, __ATOMIC_SEQ_CST);
    if (g == N.gen && now < N.next_ns) {
        *c = N.count;
        return 0;
    }
    pc_node_count_now(now, gpu, &N.count);
    N.gen = g;
    N.next_ns = now + PC_NODE_RECOUNT_NS;
    *c = N.count;
    return 1;
}

void pc_node_note_threads(unsigned threads)
{
    if (N.state == PC_NODE_JOINED)
        __atomic_store_n(&N.seg.map->slot[N.idx].threads, threads, __ATOMIC_RELAXED);
}

void pc_node_leave(void)
{
    struct pc_node_slot *me;
    uint64_t tok;

    if (N.state != PC_NODE_JOINED)
        return;
    N.state = PC_NODE_LEFT;
    me = &N.seg.map->slot[N.idx];
    tok = N.token;
    __atomic_store_n(&me->last_ns, 0, __ATOMIC_RELAXED);
    __atomic_compare_exchange_n(&me->token, &tok, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
    pc_node_bump();
    pc_nodeseg_leave(&N.seg);
}

void pc_node_after_fork_child(void)
{
    /* Only the child's reference to the open file description goes: the
     * parent's locks are the parent's until it closes its own or dies. */
    if (N.seg.fd >= 0)
        close(N.seg.fd);
    if (N.seg.map)
        munmap(N.seg.map, sizeof *N.seg.map);
    memset(&N, 0, sizeof N);
    N.seg.fd = -1;
    N.state = PC_NODE_LEFT;          /* a fork child never joins (stage.c passes its copies through) */
}
