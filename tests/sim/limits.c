/* limits - a CUDA program under a task limit (pids.max, RLIMIT_NPROC) for
 * limits.sh.  It does its CUDA work, then prints one line to stdout:
 *
 *   copy=N unmap=M made=K
 *
 * N and M: its threads named pincache-copy and pincache-unmap (pincache's
 * copy threads and reaper; 0 plainly); K: the threads it could create
 * after the work before pthread_create refused one (0 unless asked).  Its
 * exit status is 0 when everything held, else the number of the check that
 * failed.
 *
 *   limits count [NPROC]    the work; with NPROC, RLIMIT_NPROC set to it
 *                           first (a limit pincache reads, with
 *                           PINCACHE_TEST_LIMITS_ROOT, as a rootless
 *                           container's)
 *   limits big              the work with 64 MiB copies (the whole ring)
 *   limits churn            only a 256 MiB pinned block allocated, written
 *                           and freed three times in a row; prints
 *                           "churned"
 *   limits fill [NPROC]     the work, then threads until pthread_create
 *                           refuses one (EAGAIN) or 4096 of them; with
 *                           NPROC (run as root), RLIMIT_NPROC set to it and
 *                           the process turned into user and group 65534
 *                           (nobody) first, so that the limit holds
 *
 * The work: an 8 MiB pageable copy to the device and back (staged under
 * pincache: its copy threads and ring start there) whose bytes must come back, and
 * a 64 MiB pinned block allocated, written and freed twice (a fast block;
 * with PINCACHE_MAX_CACHED=0 released at once: the reaper starts).  Every
 * successful call must leave errno as it was set before it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

/* Under ASan: LeakSanitizer checks at exit from a task of its own, which a
 * pids limit the program has just filled refuses ("LeakSanitizer has
 * encountered a fatal error", status 1): the limit, not a leak. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
#include <cuda_runtime_api.h>

#define N_BIG ((size_t)64 << 20)
#define MAX_FILL 4096
#define ERRNO_MARK 4242

/* The call's result, 0 (success) or not; a success that changed errno
 * counts as a failure. */
static int call(int r)
{
    int e = errno;

    errno = ERRNO_MARK;
    return r != 0 || e != ERRNO_MARK ? -1 : 0;
}
#define C(x) call((int)(x))

static size_t N_COPY = (size_t)8 << 20;

/* A pinned block of n bytes allocated, written and freed times times in a
 * row: 0, or the step (err, err + 1) that failed. */
static int pinned_cycles(size_t n, int times, int err)
{
    char *p = NULL;

    for (int k = 0; k < times; k++) {
        if (C(cudaHostAlloc((void **)&p, n, 0)))
            return err;
        memset(p, k + 1, n);
        if (p[n - 1] != k + 1 || C(cudaFreeHost(p)))
            return err + 1;
    }
    return 0;
}

/* 0, or the number (from 10 up) of the step that failed. */
static int work(void)
{
    unsigned char *h = malloc(N_COPY), *d = NULL;
    int r;

    if (!h)
        return 10;
    errno = ERRNO_MARK;
    if (C(cudaMalloc((void **)&d, N_COPY)))
        return 11;
    for (size_t i = 0; i < N_COPY; i++)
        h[i] = (unsigned char)(i * 7 + 3);
    if (C(cudaMemcpy(d, h, N_COPY, cudaMemcpyHostToDevice)))
        return 12;
    memset(h, 0, N_COPY);
    if (C(cudaMemcpy(h, d, N_COPY, cudaMemcpyDeviceToHost)))
        return 13;
    for (size_t i = 0; i < N_COPY; i++)
        if (h[i] != (unsigned char)(i * 7 + 3))
            return 14;
    for (int k = 0; k < 2; k++) {
        if ((r = pinned_cycles(N_BIG, 1, 15)) != 0)
            return r;
        if (C(cudaDeviceSynchronize()))
            return 17;
    }
    free(h);
    return C(cudaFree(d)) ? 18 : 0;
}

/* This process's threads named name. */
static int named(const char *name)
{
    char path[320], comm[64];
    struct dirent *e;
    int n = 0, fd;
    ssize_t got;
    DIR *dir = opendir("/proc/self/task");

    if (!dir)
        return -1;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        if ((fd = open(path, O_RDONLY)) < 0)
            continue;
        got = read(fd, comm, sizeof comm - 1);
        close(fd);
        if (got <= 0)
            continue;
        comm[got] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        n += strcmp(comm, name) == 0;
    }
    closedir(dir);
    return n;
}

static int never[2];          /* a pipe nobody writes: the fillers wait on it */

static void *filler(void *arg)
{
    char c;

    (void)arg;
    while (read(never[0], &c, 1) != 0)
        ;
    return NULL;
}

/* Threads until one is refused: the count, or -1 when the refusal was not
 * EAGAIN. */
static int fill(void)
{
    pthread_attr_t a;
    pthread_t t;
    int made = 0, rc = 0;

    if (pipe(never) != 0 || pthread_attr_init(&a) != 0 || pthread_attr_setstacksize(&a, 64 << 10) != 0)
        return -1;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    while (made < MAX_FILL && (rc = pthread_create(&t, &a, filler, NULL)) == 0)
        made++;
    return made == MAX_FILL || rc == EAGAIN ? made : -1;
}

/* A 256 MiB pinned block allocated, written and freed three times, each
 * free followed at once by the next allocation: 0, or the step (from 20)
 * that failed. */
static int churn(void)
{
    int r;

    errno = ERRNO_MARK;
    if ((r = pinned_cycles((size_t)256 << 20, 3, 20)) != 0)
        return r;
    printf("churned\n");
    return 0;
}

static int set_nproc(const char *s)
{
    struct rlimit rl;
    rlim_t n = (rlim_t)strtoul(s, NULL, 10);

    if (n == 0 || getrlimit(RLIMIT_NPROC, &rl) != 0)
        return -1;
    rl.rlim_cur = n;
    if (rl.rlim_max < n)
        rl.rlim_max = n;     /* root only; any other user keeps a lower one */
    return setrlimit(RLIMIT_NPROC, &rl);
}

int main(int argc, char **argv)
{
    int filling, made = 0, r;

    if (argc < 2 || (strcmp(argv[1], "count") && strcmp(argv[1], "fill") && strcmp(argv[1], "big") &&
                     strcmp(argv[1], "churn")))
        return 1;
    filling = !strcmp(argv[1], "fill");
    if (!strcmp(argv[1], "big"))
        N_COPY = (size_t)64 << 20;
    if (argc > 2 && set_nproc(argv[2]) != 0)
        return 2;
    if (argc > 2 && filling) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            return 3;
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);   /* its /proc/self/task stays its own */
    }
    if (!strcmp(argv[1], "churn"))
        return churn();
    if ((r = work()) != 0)
        return r;
    if (filling && (made = fill()) < 0)
        return 4;
    printf("copy=%d unmap=%d made=%d\n", named("pincache-copy"), named("pincache-unmap"), made);
    return 0;
}
