/* sidefx - a CUDA program whose side effects other than CUDA's sidefx.sh
 * compares plainly and under pincache.  It writes nothing; its exit status
 * is 0 when everything held, else the number of the check that failed.
 *
 *   sidefx stdfds   run with some of 0, 1, 2 closed: after the CUDA work
 *                   they are still closed, and the program's own next
 *                   open() gets the lowest of them (pincache's descriptors
 *                   never take a standard number)
 *   errno           errno is 0 when main starts, and each successful CUDA
 *                   call leaves it as it was set before the call
 *   nofile          RLIMIT_NOFILE lowered so that no descriptor is free:
 *                   the same calls still succeed (a fast block's memfd
 *                   cannot be made: the real call makes the block), with
 *                   no error and errno untouched, and once the limit is
 *                   back no descriptor was left open
 *   stack [BYTES]   the CUDA work on a thread whose stack is BYTES (by
 *                   default the least pthreads allows, PTHREAD_STACK_MIN),
 *                   which then calls exit(): the exit report is written
 *                   on that stack too
 *   segv            dirty tracking, as a checkpointer or a garbage collector
 *                   does it: a pageable buffer is write-protected (then
 *                   made unreadable), a SIGSEGV handler opens each page
 *                   the copy touches; an 8 MiB copy into it and one out of
 *                   it succeed, and the handler ran
 *   exit            exit() from main while other threads are inside calls
 *                   that never return (a staged copy and a stream
 *                   synchronization behind a host function that blocks
 *                   forever) or are in the middle of one (pinned blocks
 *                   allocated and freed, staged copies on a stream of
 *                   their own): the process ends, with status 0
 *   fork            fork() 100 times while another thread allocates and
 *                   frees 64 MiB blocks (run with no cache: every one a
 *                   fast block, its memfds open while it is made): no
 *                   child finds a memfd among its descriptors
 *
 * The CUDA work (work()): a 4 MiB pageable copy each way first (staged
 * under pincache: the node's shared file is opened on the way), a small
 * pinned block allocated, freed and allocated again (a cache hit), a
 * 64 MiB one (a fast block: a memfd per chunk), an async copy and a
 * stream synchronization. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#define N_COPY ((size_t)4 << 20)
#define N_BIG ((size_t)64 << 20)

static char *dev, *host;

/* errno mode: every call of work() must leave errno at this. */
#define ERRNO_MARK 4242
static int check_errno;

/* The call's result, 0 (success) or not; with check_errno, a success that
 * changed errno counts as a failure. */
static int call(int r)
{
    int e = errno;

    if (r == 0 && check_errno && e != ERRNO_MARK)
        return -1;
    errno = ERRNO_MARK;
    return r;
}
#define C(x) call((int)(x))

/* 0, or the number (from 10 up) of the step that failed. */
static int work(void)
{
    char *p = NULL;

    errno = ERRNO_MARK;
    if (!host && !(host = malloc(N_COPY)))
        return 10;
    if (!dev && C(cudaMalloc((void **)&dev, N_COPY)))
        return 11;
    memset(host, 9, N_COPY);
    if (C(cudaMemcpy(dev, host, N_COPY, cudaMemcpyHostToDevice)))
        return 12;
    memset(host, 0, N_COPY);
    if (C(cudaMemcpy(host, dev, N_COPY, cudaMemcpyDeviceToHost)) || host[0] != 9 ||
        host[N_COPY - 1] != 9)
        return 13;
    if (C(cudaHostAlloc((void **)&p, 4096, 0)) || C(cudaFreeHost(p)))
        return 14;
    if (C(cudaHostAlloc((void **)&p, 4096, 0)) || C(cudaFreeHost(p)))
        return 15;
    if (C(cudaHostAlloc((void **)&p, N_BIG, 0)))
        return 16;
    memset(p, 5, N_BIG);
    if (p[N_BIG - 1] != 5 || C(cudaFreeHost(p)))
        return 17;
    if (C(cudaMemcpyAsync(dev, host, N_COPY, cudaMemcpyHostToDevice, 0)))
        return 18;
    if (C(cudaStreamSynchronize(0)))
        return 19;
    if (C(cudaGetLastError()))
        return 20;
    return 0;
}

static int is_closed(int fd)
{
    return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static int stdfds(void)
{
    int closed[3], lowest = -1, fd, r;

    for (fd = 2; fd >= 0; fd--)
        if ((closed[fd] = is_closed(fd)))
            lowest = fd;
    if (lowest < 0)
        return 2;            /* the script closes at least one */
    if ((r = work()) != 0)
        return r;
    for (fd = 0; fd < 3; fd++)
        if (closed[fd] && !is_closed(fd))
            return 3 + fd;   /* 3, 4, 5: pincache's file took 0, 1 or 2 */
    fd = open("/dev/null", O_RDONLY);
    if (fd != lowest)
        return 6;
    return 0;
}

static int errno_mode(int e0)
{
    if (e0 != 0)
        return 2;
    check_errno = 1;
    return work();
}

/* Every number below limit in use: the lowest free one is the answer. */
static int lowest_free(void)
{
    int fd = open("/dev/null", O_RDONLY);

    if (fd >= 0)
        close(fd);
    return fd;
}

static int nofile(void)
{
    struct rlimit old, rl;
    int free_fd = lowest_free(), r;

    if (free_fd < 0 || getrlimit(RLIMIT_NOFILE, &old) != 0)
        return 2;
    rl = old;
    rl.rlim_cur = (rlim_t)free_fd;        /* no descriptor can be made */
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 3;
    if (open("/dev/null", O_RDONLY) >= 0 || errno != EMFILE)
        return 4;
    check_errno = 1;
    r = work();
    check_errno = 0;
    if (setrlimit(RLIMIT_NOFILE, &old) != 0)
        return 5;
    if (r)
        return r;
    if (lowest_free() != free_fd)
        return 6;            /* a descriptor was left open */
    return 0;
}

static volatile sig_atomic_t faults;

static void open_page(int sig, siginfo_t *si, void *uc)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

    (void)sig;
    (void)uc;
    faults++;
    if (mprotect((void *)((uintptr_t)si->si_addr & ~(pg - 1)), pg, PROT_READ | PROT_WRITE) != 0)
        _exit(99);
}

static int segv(void)
{
    size_t n = (size_t)8 << 20;
    struct sigaction sa;
    char *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *d = NULL;

    if (h == MAP_FAILED || C(cudaMalloc((void **)&d, n)))
        return 2;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = open_page;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
        return 3;
    memset(h, 3, n);
    if (C(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)))
        return 4;
    memset(h, 0, n);
    if (mprotect(h, n, PROT_READ) != 0)
        return 5;
    if (C(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost)) || h[0] != 3 || h[n - 1] != 3)
        return 6;
    if (mprotect(h, n, PROT_NONE) != 0)
        return 7;
    if (C(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice)))
        return 8;
    if (faults < 2)
        return 9;
    return 0;
}

static int never[2];          /* a pipe nobody writes */

static void CUDART_CB block_forever(void *arg)
{
    char c;

    (void)arg;
    while (read(never[0], &c, 1) != 0)
        ;
}

static void *copy_behind(void *arg)
{
    (void)arg;
    cudaMemcpy(dev, host, N_COPY, cudaMemcpyHostToDevice);   /* waits for the legacy stream */
    return NULL;
}

static void *sync_behind(void *arg)
{
    (void)arg;
    cudaStreamSynchronize(0);
    return NULL;
}

static void *churn(void *arg)
{
    char *p, *h = malloc(N_COPY), *d = NULL;
    cudaStream_t s;

    (void)arg;
    if (!h || cudaMalloc((void **)&d, N_COPY) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        return NULL;
    memset(h, 1, N_COPY);
    for (;;) {
        if (cudaHostAlloc((void **)&p, N_BIG, 0) == cudaSuccess)
            cudaFreeHost(p);
        cudaMemcpyAsync(d, h, N_COPY, cudaMemcpyHostToDevice, s);
        cudaMemcpyAsync(h, d, N_COPY, cudaMemcpyDeviceToHost, s);
        cudaStreamSynchronize(s);
    }
    return NULL;
}

static int exit_mode(void)
{
    void *(*body[])(void *) = { copy_behind, sync_behind, churn, churn };
    struct timespec ms100 = { 0, 100000000 };
    pthread_t t;
    int r;

    if ((r = work()) != 0)   /* everything started: staging, the node share */
        return r;
    if (pipe(never) != 0 || cudaLaunchHostFunc(0, block_forever, NULL) != cudaSuccess)
        return 2;
    for (size_t i = 0; i < sizeof body / sizeof body[0]; i++)
        if (pthread_create(&t, NULL, body[i], NULL) != 0)
            return 3;
    nanosleep(&ms100, NULL);
    exit(0);
}

static volatile int stop_churn;

static void *alloc_free(void *arg)
{
    char *p;

    (void)arg;
    while (!__atomic_load_n(&stop_churn, __ATOMIC_RELAXED))
        if (cudaHostAlloc((void **)&p, N_BIG, 0) == cudaSuccess)
            cudaFreeHost(p);
    return NULL;
}

/* In a fork child: 1 when one of its descriptors is a memfd. */
static int has_memfd(void)
{
    char path[64], link[256];
    ssize_t n;

    for (int fd = 0; fd < 1024; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            if (strncmp(link, "/memfd:", 7) == 0)
                return 1;
        }
    }
    return 0;
}

static int fork_mode(void)
{
    struct timespec ms2 = { 0, 2000000 };
    pthread_t t;
    int bad = 0, st, r;

    if ((r = work()) != 0)
        return r;
    if (pthread_create(&t, NULL, alloc_free, NULL) != 0)
        return 2;
    for (int i = 0; i < 100; i++) {
        pid_t pid = fork();

        if (pid == 0)
            _exit(has_memfd());
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
            return 3;
        bad += WEXITSTATUS(st) != 0;
        nanosleep(&ms2, NULL);
    }
    __atomic_store_n(&stop_churn, 1, __ATOMIC_RELAXED);
    pthread_join(t, NULL);
    return bad ? 4 : 0;
}

static void *small_main(void *arg)
{
    (void)arg;
    exit(work());
}

static int stack(const char *bytes)
{
    long least = sysconf(_SC_THREAD_STACK_MIN);
    size_t size = bytes ? (size_t)strtoul(bytes, NULL, 0) : 0;
    pthread_attr_t a;
    pthread_t t;

    if (size == 0)
        size = least > PTHREAD_STACK_MIN ? (size_t)least : (size_t)PTHREAD_STACK_MIN;
    if (pthread_attr_init(&a) != 0 || pthread_attr_setstacksize(&a, size) != 0 ||
        pthread_create(&t, &a, small_main, NULL) != 0)
        return 2;
    pthread_join(t, NULL);
    return 3;                /* the thread exits the process */
}

int main(int argc, char **argv)
{
    int e0 = errno;

    if (argc < 2)
        return 1;
    if (!strcmp(argv[1], "stdfds"))
        return stdfds();
    if (!strcmp(argv[1], "errno"))
        return errno_mode(e0);
    if (!strcmp(argv[1], "nofile"))
        return nofile();
    if (!strcmp(argv[1], "fork"))
        return fork_mode();
    if (!strcmp(argv[1], "exit"))
        return exit_mode();
    if (!strcmp(argv[1], "segv"))
        return segv();
    if (!strcmp(argv[1], "stack"))
        return stack(argc > 2 ? argv[2] : NULL);
    return 1;
}
