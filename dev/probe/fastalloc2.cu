// fastalloc2.cu - issue 18: which way of making a pinned block is cheap AND
// keeps cudaHostAlloc's fork behaviour (fork costs nothing, the child reads
// the block, and sees the parent's later writes if the mapping is shared).
// For each variant: map / fault / register / unregister / unmap times, the
// fork cost with the block live, what the child sees, and copy rates.
//   nvcc -O2 -arch=sm_90 -cudart shared -o fastalloc2 dev/probe/fastalloc2.cu -lcuda && ./fastalloc2
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <functional>
#include <sys/resource.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static int NT = 16;

enum { V_HOSTALLOC, V_PRIV_THP, V_PRIV_THP_DONTFORK, V_PRIV_4K, V_MEMFD1, V_MEMFD_PER_THREAD, V_MEMFD1_FALLOC,
       V_SHANON_POPULATE, V_HUGETLB, V_N };
static const char *vname[] = { "hostalloc", "private-thp", "private-thp-dontfork", "private-4k", "memfd-one",
                               "memfd-per-thread", "memfd-one-fallocate", "shared-anon-populate", "hugetlb-shared" };

struct times { double map, fault, reg, unreg, unmap; int rc; };

static void run_threads(int n, const std::function<void(int)> &f)
{
    std::vector<std::thread> th;
    for (int i = 0; i < n; i++)
        th.emplace_back(f, i);
    for (auto &t : th)
        t.join();
}

static void touch(char *p, size_t n)
{
    for (size_t o = 0; o < n; o += 4096)
        p[o] = 0;
}

// chunk i of NT over n bytes, 2 MiB aligned
static void chunk(size_t n, int i, size_t *off, size_t *len)
{
    size_t per = ((n / NT) + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    size_t o = (size_t)i * per;
    *off = o < n ? o : n;
    *len = o < n ? std::min(per, n - o) : 0;
}

static char *make(int v, size_t n, struct times *t)
{
    double t0 = now_ms();
    char *p = NULL;
    memset(t, 0, sizeof *t);
    if (v == V_HOSTALLOC) {
        t->rc = cudaHostAlloc((void **)&p, n, 0);
        t->reg = now_ms() - t0;
        return t->rc ? NULL : p;
    }
    switch (v) {
    case V_PRIV_THP:
    case V_PRIV_THP_DONTFORK:
    case V_PRIV_4K:
        p = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED && v != V_PRIV_4K)
            madvise(p, n, MADV_HUGEPAGE);
        if (p != MAP_FAILED && v == V_PRIV_THP_DONTFORK)
            madvise(p, n, MADV_DONTFORK);
        break;
    case V_MEMFD1:
    case V_MEMFD1_FALLOC: {
        int fd = memfd_create("pc", 0);
        if (fd < 0 || ftruncate(fd, (off_t)n))
            return NULL;
        if (v == V_MEMFD1_FALLOC) {
            t->map = now_ms() - t0;
            double t1 = now_ms();
            run_threads(NT, [&](int i) {
                size_t o, l;
                chunk(n, i, &o, &l);
                if (l)
                    fallocate(fd, 0, (off_t)o, (off_t)l);
            });
            t->fault = now_ms() - t1;
            t0 = now_ms() - t->map;
        }
        p = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        break;
    }
    case V_MEMFD_PER_THREAD: {
        p = (char *)mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        break;
    }
    case V_SHANON_POPULATE:
        p = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        break;
    case V_HUGETLB:
        p = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        break;
    }
    if (p == MAP_FAILED || !p) {
        t->rc = -1;
        return NULL;
    }
    if (v != V_MEMFD1_FALLOC)
        t->map = now_ms() - t0;
    double t1 = now_ms();
    int bad = 0;
    run_threads(NT, [&](int i) {
        size_t o, l;
        chunk(n, i, &o, &l);
        if (!l)
            return;
        if (v == V_MEMFD_PER_THREAD) {
            int fd = memfd_create("pc", 0);
            if (fd < 0 || ftruncate(fd, (off_t)l) ||
                mmap(p + o, l, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
                bad = 1;
            if (fd >= 0)
                close(fd);
            touch(p + o, l);
        } else if (v == V_SHANON_POPULATE || v == V_MEMFD1_FALLOC) {
            if (madvise(p + o, l, MADV_POPULATE_WRITE))
                touch(p + o, l);
        } else {
            touch(p + o, l);
        }
    });
    t->fault += now_ms() - t1;
    if (bad) {
        t->rc = -2;
        munmap(p, n);
        return NULL;
    }
    t1 = now_ms();
    t->rc = cudaHostRegister(p, n, 0);
    t->reg = now_ms() - t1;
    if (t->rc) {
        munmap(p, n);
        return NULL;
    }
    return p;
}

static void unmake(int v, char *p, size_t n, struct times *t)
{
    double t0 = now_ms();
    if (v == V_HOSTALLOC) {
        cudaFreeHost(p);
        t->unreg = now_ms() - t0;
        return;
    }
    cudaHostUnregister(p);
    t->unreg = now_ms() - t0;
    t0 = now_ms();
    munmap(p, n);
    t->unmap = now_ms() - t0;
}

// fork with the block live: the fork's cost; the child reads byte 12345
// (code bit 0: saw the value before the fork), then waits for the parent to
// write a new value and reads again (bit 1: saw the later write).
static void forkview(int v, char *p, size_t n)
{
    int pp[2], cp[2];
    if (pipe(pp) || pipe(cp))
        return;
    p[12345] = 7;
    double t0 = now_ms();
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        int code = (p[12345] == 7) ? 1 : 0;
        (void)!write(cp[1], "r", 1);
        (void)!read(pp[0], &c, 1);
        code |= (p[12345] == 9) ? 2 : 0;
        _exit(code);
    }
    double fk = now_ms() - t0;
    char c;
    close(cp[1]);
    close(pp[0]);
    (void)!read(cp[0], &c, 1); // returns 0 at once if the child died

    p[12345] = 9;
    (void)!write(pp[1], "w", 1);
    int st = 0;
    waitpid(pid, &st, 0);
    printf("FORK %s %zu MiB: fork %.2f ms; child %s\n", vname[v], n >> 20, fk,
           WIFSIGNALED(st) ? "killed by a signal (faulted)"
           : !WIFEXITED(st) ? "?"
           : WEXITSTATUS(st) == 3 ? "saw the bytes and the parent's later write (shared)"
           : WEXITSTATUS(st) == 1 ? "saw the bytes, not the later write (copy)"
                                  : "did not see the bytes");
    close(pp[1]);
    close(cp[0]);
}

static double rate(void *dst, const void *src, size_t n, cudaMemcpyKind k)
{
    std::vector<double> v;
    for (int i = 0; i < 9; i++) {
        double t0 = now_ms();
        cudaMemcpy(dst, src, n, k);
        v.push_back(now_ms() - t0);
    }
    std::sort(v.begin(), v.end());
    return n / (v[4] * 1e6);
}

static void catfile(const char *f)
{
    char buf[256] = "";
    FILE *fp = fopen(f, "r");
    if (fp) {
        if (!fgets(buf, sizeof buf, fp))
            buf[0] = 0;
        fclose(fp);
    }
    printf("SYS %s: %s", f, buf[0] ? buf : "(unreadable)\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1)
        NT = atoi(argv[1]);
    struct utsname u;
    uname(&u);
    printf("SYS kernel %s, %ld cpus online, %d fault threads\n", u.release, sysconf(_SC_NPROCESSORS_ONLN), NT);
    catfile("/sys/kernel/mm/transparent_hugepage/enabled");
    catfile("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
    catfile("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/shmem_enabled");
    catfile("/sys/kernel/mm/transparent_hugepage/defrag");
    catfile("/proc/sys/vm/nr_hugepages");
    catfile("/sys/devices/system/node/online");
    cudaFree(0);
    int numa = -9;
    cudaError_t e = cudaDeviceGetAttribute(&numa, (cudaDeviceAttr)134, 0);
    printf("SYS device 0 host NUMA id: rc %d value %d\n", (int)e, numa);
    cudaGetLastError();
    // costs, three rounds interleaved
    for (size_t sz : { (size_t)64 << 20, (size_t)1 << 30, (size_t)4 << 30 }) {
        for (int round = 0; round < (sz > ((size_t)1 << 30) ? 1 : 3); round++) {
            for (int v = 0; v < V_N; v++) {
                if (sz == ((size_t)4 << 30) && (v == V_PRIV_THP_DONTFORK || v == V_MEMFD1 || v == V_MEMFD1_FALLOC))
                    continue;
                struct times t;
                double t0 = now_ms();
                char *p = make(v, sz, &t);
                double a = now_ms() - t0;
                if (!p) {
                    printf("COST %s %zu MiB round %d: failed rc %d\n", vname[v], sz >> 20, round, t.rc);
                    continue;
                }
                if (round == 0 && sz <= ((size_t)1 << 30))
                    forkview(v, p, sz);
                t0 = now_ms();
                unmake(v, p, sz, &t);
                double f = now_ms() - t0;
                printf("COST %s %zu MiB round %d: alloc %.1f (map %.1f fault %.1f register %.1f) free %.1f "
                       "(unregister %.1f unmap %.1f) ms\n",
                       vname[v], sz >> 20, round, a, t.map, t.fault, t.reg, f, t.unreg, t.unmap);
            }
        }
    }
    // copy rates, 64 KiB .. 1 GiB, hostalloc against memfd-per-thread and shared-anon
    void *d;
    cudaMalloc(&d, (size_t)1 << 30);
    int vs[] = { V_HOSTALLOC, V_MEMFD_PER_THREAD, V_SHANON_POPULATE, V_PRIV_THP };
    char *blk[4];
    struct times t;
    for (int i = 0; i < 4; i++)
        blk[i] = make(vs[i], (size_t)1 << 30, &t);
    for (size_t n : { (size_t)64 << 10, (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20, (size_t)1 << 30 }) {
        for (int i = 0; i < 4; i++) {
            if (!blk[i])
                continue;
            double h = rate(d, blk[i], n, cudaMemcpyHostToDevice);
            double dd = rate(blk[i], d, n, cudaMemcpyDeviceToHost);
            printf("RATE %s %zu KiB: H2D %.1f D2H %.1f GB/s\n", vname[vs[i]], n >> 10, h, dd);
        }
    }
    return 0;
}
