/* fastalloc.c - fast blocks (fastalloc.h).
 *
 * Why these steps (H200, dev/probe/fastalloc2.cu, docs/runtime-facts.md
 * "Fast blocks"): cudaHostAlloc takes 415-537 ms for 1 GiB on one thread.
 * The same memory mapped by us, faulted in by 16 threads and registered in
 * one call takes 99-111 ms when the mapping is shared and 42-52 ms when it
 * is private with huge pages.  The kernel here gives shared memory no huge
 * pages (shmem_enabled: never), hence the difference; and one shared object
 * faulted by 16 threads contends on its own locks (273-304 ms), so each
 * thread's chunk is a mapping of its own.  A private registered mapping is
 * copied by every fork() (835 ms per GiB) where cudaHostAlloc memory is
 * shared with the child (1.3 ms, the child sees the parent's later writes);
 * shared chunks behave exactly so, which is why "on" uses them and the
 * private huge pages are an opt-in that keeps them out of children
 * (MADV_DONTFORK: a child that touches the block crashes).
 *
 * The context checks, the registration and the unregistration go through
 * the driver (fastdrv.c), whose calls leave the runtime's last error alone,
 * so a fast block that cannot be made leaves no trace and the caller makes
 * the real one. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "stage/fastalloc.h"
#include "stage/fastmem.h"
#include "stage/fastdrv.h"
#include "real/real.h"
#include "stage/stage_threads.h"
#include "util/log.h"
#include "util/options.h"
#include "util/sigguard.h"
#include "util/sorted.h"
#include "util/state.h"
#include "util/stats.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23          /* Linux 5.14 */
#endif
#define PC_FAST_CHUNK_MIN (64u << 10)   /* no chunk smaller: its mapping would cost more than its faults */
#define PC_FAST_PARALLEL_MIN (256u << 10) /* smaller blocks are faulted by the caller alone */
/* cudaHostAlloc's cost on the H200, for the saved-time estimate: 0.53 ms up
 * to 1 MB (core/pool.h's seed), 415-537 ms per GiB (run 56). */
#define PC_FAST_REAL_FIXED_NS 500000ull
#define PC_FAST_REAL_PER_MIB_NS 460000ull

struct pc_fast {
    char *base;
    size_t size;
    int dev;
    unsigned vmas;                      /* mappings it takes (one per shared chunk) */
};

/* Each shared chunk is a mapping the kernel cannot merge with its
 * neighbours, and a process has 65530 by default (vm.max_map_count): fast
 * blocks take at most this many, then one chunk each, then none. */
#define PC_FAST_VMA_BUDGET 8192u
static unsigned pc_fast_vmas;           /* atomic */

/* Sorted by base; changed only when a block is made or released. */
static pthread_mutex_t pc_fast_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pc_fast *pc_fast_tab;
static size_t pc_fast_n, pc_fast_cap;

/* Index of the first entry whose base is above p.  Lock held. */
static size_t pc_fast_upper(const void *p)
{
    return pc_sorted_upper(pc_fast_tab, pc_fast_n, sizeof *pc_fast_tab, (uintptr_t)p);
}

static int pc_fast_add(char *base, size_t size, int dev, unsigned vmas)
{
    size_t i;

    pthread_mutex_lock(&pc_fast_lock);
    if (pc_fast_n == pc_fast_cap) {
        size_t cap = pc_fast_cap ? 2 * pc_fast_cap : 64;
        struct pc_fast *t = realloc(pc_fast_tab, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&pc_fast_lock);
            return -1;
        }
        pc_fast_tab = t;
        pc_fast_cap = cap;
    }
    i = pc_fast_upper(base);
    memmove(&pc_fast_tab[i + 1], &pc_fast_tab[i], (pc_fast_n - i) * sizeof *pc_fast_tab);
    pc_fast_tab[i] = (struct pc_fast){ base, size, dev, vmas };
    __atomic_store_n(&pc_fast_n, pc_fast_n + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pc_fast_lock);
    return 0;
}

/* Remove the entry at index i into *out.  Lock held. */
static void pc_fast_take(size_t i, struct pc_fast *out)
{
    *out = pc_fast_tab[i];
    memmove(&pc_fast_tab[i], &pc_fast_tab[i + 1], (pc_fast_n - i - 1) * sizeof *pc_fast_tab);
    __atomic_store_n(&pc_fast_n, pc_fast_n - 1, __ATOMIC_RELAXED);
}

/* The entry containing p, copied into *out: 1, or 0. */
static int pc_fast_find(const void *p, struct pc_fast *out)
{
    size_t i;
    int in = 0;

    if (!p || !__atomic_load_n(&pc_fast_n, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&pc_fast_lock);
    i = pc_fast_upper(p);
    if (i > 0 && (uintptr_t)p - (uintptr_t)pc_fast_tab[i - 1].base < pc_fast_tab[i - 1].size) {
        *out = pc_fast_tab[i - 1];
        in = 1;
    }
    pthread_mutex_unlock(&pc_fast_lock);
    return in;
}

int pc_fast_contains(const void *p)
{
    struct pc_fast f;

    if (!pc_fast_find(p, &f))
        return 0;
    return f.base == (const char *)p ? 2 : 1;
}

/* ---- making one */

/* How a shared chunk's pages are made: 1 allocated by fallocate on a memfd
 * of its own, then mapped (the default: 1 GiB in 100-110 ms on the H200,
 * run 58), 0 faulted in by MADV_POPULATE_WRITE alone (133-168 ms): the test
 * option PINCACHE_TEST_FAST_POPULATE measures the two side by side. */

/* The copy threads' runner (pc_stage_parallel), handed down by init.c. */
static int (*pc_fast_runner)(void (*)(void *, uint64_t), void *, uint64_t, int, int);

void pc_fast_set_runner(int (*run)(void (*fn)(void *arg, uint64_t i), void *arg, uint64_t n, int lock_held,
                                   int wide))
{
    pc_fast_runner = run;
}

struct pc_fast_job {
    char *base;
    size_t size, chunk;
    int shared, node;
    int *fd;                            /* fallocate fill: each chunk's memfd, else NULL */
    int failed;                         /* atomic */
};

static size_t pc_fast_chunk_len(const struct pc_fast_job *j, uint64_t i, size_t *off)
{
    *off = (size_t)i * j->chunk;
    return j->size - *off < j->chunk ? j->size - *off : j->chunk;
}

/* Chunk i's own shared object over its part of the reservation, made by
 * the caller before the threads start: a mapping takes the address space's
 * lock for writing, which would stall every other thread's faults. */
static int pc_fast_map_chunk(struct pc_fast_job *j, uint64_t i)
{
    size_t off, len = pc_fast_chunk_len(j, i, &off);
    int fd = -1;

    if (j->fd) {
        struct pc_sigguard g;
        int bad;

        fd = pc_fast_memfd();
        if (fd < 0)
            return -1;
        pc_sigguard_begin(&g);
        bad = ftruncate(fd, (off_t)len) != 0 ? errno : 0;
        pc_sigguard_end(&g, bad);
        if (bad) {
            close(fd);
            return -1;
        }
        j->fd[i] = fd;
    }
    if (mmap(j->base + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | (fd < 0 ? MAP_ANONYMOUS : 0),
             fd, 0) == MAP_FAILED)
        return -1;
    return 0;
}

/* Chunk i on a copy thread: placed, advised, faulted in. */
static void pc_fast_chunk(void *arg, uint64_t i)
{
    struct pc_fast_job *j = arg;
    size_t off, len = pc_fast_chunk_len(j, i, &off);
    char *p = j->base + off;

    /* The pages first, without mapping them (cheaper per page, measured
     * run 56), then the mapping; both fail cleanly when memory is short. */
    if (j->fd) {
        struct pc_sigguard g;
        int bad;

        pc_sigguard_begin(&g);
        bad = fallocate(j->fd[i], 0, 0, (off_t)len) != 0 ? errno : 0;
        pc_sigguard_end(&g, bad);
        if (bad) {
            __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
            return;
        }
    }
    /* Out of memory is an error here, not a later SIGBUS or OOM kill.  A
     * kernel without MADV_POPULATE_WRITE (EINVAL) leaves the faulting to
     * the registration, slower but just as safe. */
    if (madvise(p, len, MADV_POPULATE_WRITE) != 0 && errno != EINVAL)
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}


int pc_fast_size(const void *p, size_t *size)
{
    struct pc_fast f;

    if (!pc_fast_find(p, &f))
        return 0;
    *size = f.size;
    return 1;
}

void pc_fast_drain(void)
{
    pc_fast_unmap_drain();
}

int pc_fast_free_answer_for(const void *p, int (*real_free)(void *p))
{
    struct pc_fast f;

    return pc_fast_find(p, &f) ? pc_fast_free_answer(f.dev, real_free) : real_free(NULL);
}

int pc_fast_alloc(void **out, size_t size, unsigned int flags, int dev, int ring_lock_held)
{
    struct pc_fast_job j;
    unsigned rflags = 0;
    uint64_t t0, t1, t2, t3, dt, real;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), nchunk;
    unsigned threads, vmas;
    int mode = pc_opt.fast_alloc, saved = errno;
    CUresult r;

    if (mode == PC_FAST_ALLOC_OFF || pc_state.forked_child || (flags & cudaHostAllocWriteCombined) ||
        (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped)) || size == 0 || size % page ||
        size < pc_opt.fast_alloc_min || __atomic_load_n(&pc_fast_vmas, __ATOMIC_RELAXED) >= 2 * PC_FAST_VMA_BUDGET ||
        !pc_fast_context_ok(dev))
        return -1;
    t0 = pc_now_ns();
    memset(&j, 0, sizeof j);
    j.size = size;
    j.shared = mode == PC_FAST_ALLOC_ON;
    j.node = pc_fast_node(dev);
    /* Shared: reserved inaccessible, each chunk then mapped over its part.
     * Private: one mapping, kept out of fork() children. */
    j.base = j.shared ? pc_fast_reserve(size, PROT_NONE, MAP_PRIVATE)
                      : pc_fast_reserve(size, PROT_READ | PROT_WRITE, MAP_PRIVATE);
    if (!j.base)
        goto fail;
    if (!j.shared && madvise(j.base, size, MADV_DONTFORK) != 0) {
        munmap(j.base, size);
        goto fail;
    }
    /* One chunk per thread (the faults cost the same everywhere), each at
     * least 64 KiB; below 256 KiB the caller alone. */
    threads = size >= PC_FAST_PARALLEL_MIN && pc_opt.stage_threads != 1 ? pc_xfer_cpus() : 1;
    if (threads > 16)
        threads = 16;
    nchunk = size / PC_FAST_CHUNK_MIN < (size_t)threads ? size / PC_FAST_CHUNK_MIN : (size_t)threads;
    vmas = __atomic_load_n(&pc_fast_vmas, __ATOMIC_RELAXED);
    if (j.shared && vmas + nchunk > PC_FAST_VMA_BUDGET)
        nchunk = 1;
    if (nchunk < 1)
        nchunk = 1;
    j.chunk = ((size / nchunk) + page - 1) & ~(page - 1);
    nchunk = (size + j.chunk - 1) / j.chunk;
    /* memfds are files: past RLIMIT_FSIZE their sizing fails (with SIGXFSZ,
     * which sigguard.h takes back), so under such a limit the chunks are
     * shared anonymous memory, faulted in instead (no file size applies). */
    if (j.shared && !pc_opt.test_fast_populate && pc_fsize_allows(j.chunk)) {
        j.fd = calloc(nchunk, sizeof *j.fd);
        if (!j.fd) {
            munmap(j.base, size);
            goto fail;
        }
        for (size_t i = 0; i < nchunk; i++)
            j.fd[i] = -1;
        pc_fast_memfds_begin();
    }
    for (size_t i = 0; j.shared && i < nchunk; i++)
        if (pc_fast_map_chunk(&j, i) != 0)
            j.failed = 1;
    /* Placement and huge-page advice by the caller, before any fault: each
     * takes the address space's lock for writing, and on part of a private
     * mapping splits it, which stalled the threads' faults (private 1 GiB:
     * 298-311 ms with the advice given chunk by chunk on the threads, H200
     * run 59, against 42-52 ms given once beforehand, run 56). */
    if (!j.failed) {
        size_t off, len;
        for (size_t i = 0; j.shared && i < nchunk; i++) {
            len = pc_fast_chunk_len(&j, i, &off);
            pc_fast_bind(j.base + off, len, j.node);
            if (pc_fast_shmem_thp() || pc_opt.test_fast_shmem_advice)   /* only where shmem gets huge pages */
                (void)madvise(j.base + off, len, MADV_HUGEPAGE);
        }
        if (!j.shared) {
            pc_fast_bind(j.base, size, j.node);
            (void)madvise(j.base, size, MADV_HUGEPAGE);
        }
    }
    t1 = pc_now_ns();
    if (!j.failed) {
        /* The copy threads if they are free (a staged copy running now
         * has them: no waiting for another thread's copy), else alone;
         * from 8 MiB (PINCACHE_TEST_FAST_WIDE_MIN) as many as the node's
         * share would give this process without its cap of 8 copy
         * threads, the rest helpers of their own, parked between blocks
         * (xfer_help.c).  H200 run 69, 8 against 16 threads: 64 MiB 8.8
         * against 5.8 ms, 1 GiB 105 against 86 ms; H100 run 76, 1 GiB
         * 64.7-68.0 ms with the helpers, 78.4-88.7 without; run 79,
         * varsize 8.80-9.29 s with helpers from 8 MiB, 9.87-10.76 from 32. */
        if (nchunk < 2 || !pc_fast_runner ||
            !pc_fast_runner(pc_fast_chunk, &j, nchunk, ring_lock_held, size >= pc_opt.test_fast_wide_min))
            for (size_t i = 0; i < nchunk; i++)
                pc_fast_chunk(&j, i);
    }
    if (j.fd) {
        for (size_t i = 0; i < nchunk; i++)
            if (j.fd[i] >= 0)
                close(j.fd[i]);
        pc_fast_memfds_end();
        free(j.fd);
        j.fd = NULL;
    }
    if (__atomic_load_n(&j.failed, __ATOMIC_RELAXED)) {
        munmap(j.base, size);
        goto fail;
    }
    if (flags & cudaHostAllocPortable)
        rflags |= CU_MEMHOSTREGISTER_PORTABLE;
    if (flags & cudaHostAllocMapped)
        rflags |= CU_MEMHOSTREGISTER_DEVICEMAP;
    t2 = pc_now_ns();
    r = pc_fast_reg(j.base, size, rflags);
    t3 = pc_now_ns();
    if (r != CUDA_SUCCESS) {
        munmap(j.base, size);
        goto fail;
    }
    vmas = j.shared ? (unsigned)nchunk : 1u;
    if (pc_fast_add(j.base, size, dev, vmas) != 0) {
        if (pc_fast_unregister(j.base, dev) >= 0)
            munmap(j.base, size);
        goto fail;
    }
    __atomic_add_fetch(&pc_fast_vmas, vmas, __ATOMIC_RELAXED);
    dt = pc_now_ns() - t0;
    real = PC_FAST_REAL_FIXED_NS + PC_FAST_REAL_PER_MIB_NS * (uint64_t)size / (1u << 20);
    PC_STAT_INC(fast_alloc_calls);
    PC_STAT_ADD(fast_alloc_bytes, size);
    PC_STAT_ADD(fast_alloc_ns, dt);
    PC_STAT_ADD(fast_alloc_map_ns, t1 - t0);
    PC_STAT_ADD(fast_alloc_fault_ns, t2 - t1);
    PC_STAT_ADD(fast_alloc_register_ns, t3 - t2);
    if (real > dt)
        PC_STAT_ADD(fast_alloc_saved_ns, real - dt);
    *out = j.base;
    return 0;
fail:
    {
        static int warned;
        PC_STAT_INC(fast_alloc_fallbacks);
        pc_log_once(&warned, PC_LOG_INFO, "a fast pinned block of %zu bytes could not be made (%s); "
                    "cudaHostAlloc makes it instead", size, j.base ? "mapping, pre-fault or registration failed"
                                                                   : "no address space");
    }
    errno = saved;           /* the real call that follows sets its own */
    return -1;
}

/* ---- releasing */

/* Unregistered in its primary context, then unmapped off this thread.  A
 * registration the driver refuses to drop keeps its pages pinned: the
 * range stays mapped (and lost) rather than handed back to the kernel with
 * the driver still counting it registered.  lost: its context is gone. */
static void pc_fast_unmake(const struct pc_fast *f, int lost)
{
    static int warned;
    uint64_t t0 = pc_now_ns();

    if (!lost && pc_fast_unregister(f->base, f->dev) < 0) {
        pc_log_once(&warned, PC_LOG_WARN, "a fast pinned block could not be unregistered; its %zu bytes stay mapped",
                    f->size);
        return;
    }
    __atomic_sub_fetch(&pc_fast_vmas, f->vmas, __ATOMIC_RELAXED);
    if (pc_opt.test_fast_sync_unmap)
        munmap(f->base, f->size);
    else
        pc_fast_unmap(f->base, f->size);
    PC_STAT_INC(fast_free_calls);
    PC_STAT_ADD(fast_free_ns, pc_now_ns() - t0);
}

int pc_fast_release(void *p)
{
    struct pc_fast f;
    size_t i;

    if (!p || !__atomic_load_n(&pc_fast_n, __ATOMIC_RELAXED))
        return 0;
    pthread_mutex_lock(&pc_fast_lock);
    i = pc_fast_upper(p);
    if (i == 0 || pc_fast_tab[i - 1].base != (char *)p) {
        pthread_mutex_unlock(&pc_fast_lock);
        return 0;
    }
    pc_fast_take(i - 1, &f);
    pthread_mutex_unlock(&pc_fast_lock);
    pc_fast_unmake(&f, 0);
    return 1;
}

void pc_fast_forget_device(int dev)
{
    pc_fast_witness_lost(dev);         /* freed with its context */
    for (;;) {
        struct pc_fast f;
        size_t i;
        int found = 0;

        pthread_mutex_lock(&pc_fast_lock);
        for (i = 0; i < pc_fast_n; i++) {
            if (pc_fast_tab[i].dev == dev) {
                pc_fast_take(i, &f);
                found = 1;
                break;
            }
        }
        pthread_mutex_unlock(&pc_fast_lock);
        if (!found)
            return;
        /* The context may still be on its way out (a reset made through
         * pincache): unregistered if it is there, unmapped either way. */
        (void)pc_fast_unregister(f.base, f.dev);
        pc_fast_unmake(&f, 1);
    }
}

void pc_fast_after_fork_child(void)
{
    /* The blocks stay mapped in the child (shared) or absent (private): the
     * child's program may read the shared ones; pincache never touches them. */
    pthread_mutex_init(&pc_fast_lock, NULL);
    __atomic_store_n(&pc_fast_n, 0, __ATOMIC_RELAXED);
    pc_fast_unmap_after_fork_child();
    pc_fast_drv_after_fork_child();
    __atomic_store_n(&pc_fast_vmas, 0, __ATOMIC_RELAXED);
}
