/* fastmem.c - the memory side of fast blocks (fastmem.h): where their
 * pages go, and unmapping them off the caller's path. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stage/fastmem.h"
#include "stage/stage_threads.h"
#include "real/real.h"
#include "util/fdsafe.h"
#include "util/limits.h"
#include "util/options.h"
#include "util/parse.h"
#include "util/stats.h"

/* ---- placement: the GPU's NUMA node, where the host has more than one */

static int pc_fast_nodes = -1;          /* online nodes; -1: not read yet */

static int pc_fast_count_nodes(void)
{
    char buf[256];
    int n;

    pc_read_small("/sys/devices/system/node/online", buf, sizeof buf);
    n = pc_parse_count_list(buf);
    return n > 0 ? n : 1;
}

/* The host node closest to device dev, or -1 where placement cannot help
 * (one node) or the driver cannot say (CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID,
 * CUDA 12.2; the H200 host answers 0). */
int pc_fast_node(int dev)
{
    int nodes = __atomic_load_n(&pc_fast_nodes, __ATOMIC_RELAXED), id = -1;

    if (nodes < 0) {
        nodes = pc_fast_count_nodes();
        __atomic_store_n(&pc_fast_nodes, nodes, __ATOMIC_RELAXED);
    }
    if (nodes < 2 || PC_CALL_DRV(cuDeviceGetAttribute, &id, (CUdevice_attribute)134, (CUdevice)dev) != CUDA_SUCCESS)
        return -1;
    return id >= 0 && id < 1024 ? id : -1;
}

/* Prefer node for [p, p+n) (a preference: a full node still gives memory). */
void pc_fast_bind(char *p, size_t n, int node)
{
    unsigned long mask[1024 / (8 * sizeof(unsigned long))];

    if (node < 0)
        return;
    memset(mask, 0, sizeof mask);
    mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
    (void)syscall(SYS_mbind, p, n, 1 /* MPOL_PREFERRED */, mask, (unsigned long)(8 * sizeof mask), 0u);
}

/* Unmapping shared memory frees its pages one by one (100-150 ms per GiB on
 * the H200, run 56), which cudaFreeHost's caller does not wait for in the
 * same measure; a reaper thread unmaps instead, once the registration is
 * gone.  The address range stays taken until then, so nothing can reuse it
 * early. */
struct pc_reap { char *base; size_t size; struct pc_reap *next; };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_cond_t idle;                /* nothing queued or being unmapped */
    struct pc_reap *head;
    int busy;                           /* the reaper is unmapping one */
    int started;                        /* 1 running, -1 could not start */
} R = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0 };

static void *pc_fast_reaper(void *arg)
{
    (void)arg;
#ifdef __GLIBC__
    pthread_setname_np(pthread_self(), "pincache-unmap");
#endif
    pthread_mutex_lock(&R.mu);
    for (;;) {
        struct pc_reap *r;
        while (!R.head)
            pthread_cond_wait(&R.cv, &R.mu);
        r = R.head;
        R.head = r->next;
        R.busy = 1;
        pthread_mutex_unlock(&R.mu);
        munmap(r->base, r->size);
        free(r);
        pthread_mutex_lock(&R.mu);
        R.busy = 0;
        if (!R.head)
            pthread_cond_broadcast(&R.idle);
    }
    return NULL;
}

/* Near a memory limit (util/limits.h) the block's pages go before the free
 * returns, as the real cudaFreeHost's do: queued, they stay charged to the
 * memory cgroup, and the allocation that often follows a free (a buffer
 * made again larger, a trim for a new block) would be charged on top of
 * them, to meet the OOM killer where plainly it fitted. */
static int pc_fast_unmap_now(size_t size)
{
    long spare = pc_limits_memory_spare(pc_limits_memory(pc_opt.test_limits_root));

    return spare != PC_LIMIT_NONE && (size_t)spare < size;
}

void pc_fast_unmap(char *base, size_t size)
{
    struct pc_reap *r;

    if (pc_fast_unmap_now(size)) {
        munmap(base, size);
        return;
    }
    r = malloc(sizeof *r);
    pthread_mutex_lock(&R.mu);
    if (R.started == 0)
        R.started = pc_threads_start(pc_fast_reaper, 1, 64u << 10) == 1 ? 1 : -1;
    if (R.started == 1 && r) {
        r->base = base;
        r->size = size;
        r->next = R.head;
        R.head = r;
        pthread_cond_signal(&R.cv);
        pthread_mutex_unlock(&R.mu);
        return;
    }
    pthread_mutex_unlock(&R.mu);
    free(r);
    munmap(base, size);
}

/* Reserve size bytes of address space on a huge-page boundary. */
char *pc_fast_reserve(size_t size, int prot, int flags)
{
    size_t extra = size >= (2u << 20) ? (2u << 20) : 0;
    char *m = mmap(NULL, size + extra, prot, flags | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0), *p;

    if (m == MAP_FAILED)
        return NULL;
    p = (char *)(((uintptr_t)m + extra - 1) & ~(uintptr_t)(extra ? extra - 1 : 0));
    if (!extra)
        return m;
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (m + size + extra > p + size)
        munmap(p + size, (size_t)(m + size + extra - (p + size)));
    return p;
}

int pc_fast_shmem_thp(void)
{
    static int thp = -1;
    int v = __atomic_load_n(&thp, __ATOMIC_RELAXED);

    if (v < 0) {
        char buf[128];
        pc_read_small("/sys/kernel/mm/transparent_hugepage/shmem_enabled", buf, sizeof buf);
        /* The bracketed word is the setting: "[never]" and "[deny]" give none. */
        v = buf[0] && !strstr(buf, "[never]") && !strstr(buf, "[deny]");
        __atomic_store_n(&thp, v, __ATOMIC_RELAXED);
    }
    return v;
}

void pc_fast_unmap_drain(void)
{
    pthread_mutex_lock(&R.mu);
    while (R.started == 1 && (R.head || R.busy))
        pthread_cond_wait(&R.idle, &R.mu);
    pthread_mutex_unlock(&R.mu);
}

/* ---- memfds in fork() children */

/* fork() copies the descriptors before the memory: a block whose memfds
 * the child got may be closed, and counted out, by the time the memory is
 * copied.  So the child closes the memfds if a block was being made when
 * its memory was copied (open) or had closed them since its fork began
 * (closed_ns, the latest close; fork_ns, the forking thread's own). */
#define PC_FAST_MEMFD "pincache-fast"
static unsigned pc_fast_memfds_open;     /* atomic: blocks with memfds open */
static uint64_t pc_fast_memfds_closed_ns; /* atomic: the last time some were closed */
static __thread uint64_t pc_fast_fork_ns __attribute__((tls_model("initial-exec")));

int pc_fast_memfd(void)
{
    return pc_fd_off_stdio(memfd_create(PC_FAST_MEMFD, MFD_CLOEXEC));
}

void pc_fast_memfds_begin(void)
{
    __atomic_add_fetch(&pc_fast_memfds_open, 1, __ATOMIC_SEQ_CST);
}

void pc_fast_memfds_end(void)
{
    uint64_t now = pc_now_ns(), was = __atomic_load_n(&pc_fast_memfds_closed_ns, __ATOMIC_RELAXED);

    while (was < now && !__atomic_compare_exchange_n(&pc_fast_memfds_closed_ns, &was, now, 0,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
        ;
    __atomic_sub_fetch(&pc_fast_memfds_open, 1, __ATOMIC_SEQ_CST);
}

void pc_fast_memfds_before_fork(void)
{
    pc_fast_fork_ns = pc_now_ns();
}

void pc_fast_unmap_after_fork_child(void)
{
    if (__atomic_load_n(&pc_fast_memfds_open, __ATOMIC_RELAXED) ||
        __atomic_load_n(&pc_fast_memfds_closed_ns, __ATOMIC_RELAXED) >= pc_fast_fork_ns)
        pc_fd_close_memfds(PC_FAST_MEMFD);
    pc_fast_memfds_open = 0;

    /* No reaper here; what the parent queued is the parent's to unmap. */
    pthread_mutex_init(&R.mu, NULL);
    pthread_cond_init(&R.cv, NULL);
    pthread_cond_init(&R.idle, NULL);
    R.head = NULL;
    R.busy = 0;
    R.started = 0;
}
