/* noderank - one rank of a node whose processes stage pageable copies at
 * the same time (tests/stage/node.sh), on the simulated device, plain or
 * under pincache.
 *
 *   noderank [-s SIZE] [-n COPIES] [-b DIR -N RANKS] [-m FILE] [-u FILE]
 *            [-t MS] [-w FILE] [-f sleep|exit]
 *
 * Each copy is a pageable .cuda(): a cudaMemcpyAsync H2D of SIZE bytes
 * (default 2M) on a stream and a cudaStreamSynchronize, then a cudaMemcpy
 * D2H into another pageable buffer, checked byte for byte; the source is
 * refilled with a new pattern each time.
 *   -n COPIES  copies to make (default 8), after any -u/-b phase
 *   -b DIR -N RANKS  barriers of RANKS processes in DIR: after its first
 *              copy each writes DIR/ready.PID and copies on until RANKS such
 *              files exist; after its last, DIR/done.PID, and copies on until
 *              RANKS exist; then DIR/bye.PID, and waits (not copying) until
 *              RANKS exist.  So every rank's last copy is made while all RANKS
 *              stage, and none exits before every other's last copy
 *   -m FILE    create FILE after the first copy (the rank is staging); with
 *              -f sleep, the child's pid in it
 *   -u FILE    copy until FILE exists, then -t MS milliseconds more
 *   -w FILE    after the copies, copy on until FILE exists (stay a member)
 *   -c FILE    after the copies, close every descriptor of a pincache-node
 *              file (as a program closing what it did not open would),
 *              open FILE under the first of those numbers and leave a line
 *              for it in stdio's buffer, written at exit
 *   -f sleep   after the first copy, fork a child that sleeps 10 s and
 *              _exits (no CUDA); -f exit: a child that exits at once with
 *              exit(0) (its atexit handlers and destructors run)
 * Every wait is bounded (120 s), then the rank fails.  On stdout one line,
 * the same plain and under pincache when every copy is right:
 *   copies=N bad=0 errors=0 digest=HEX
 * (N: the -n copies; digest: of the bytes read back in those).  Exit
 * status 0 when no byte and no call was wrong. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"

#define WAIT_NS (120ull * 1000000000ull)

static size_t size = 2u << 20;
static unsigned char *src, *dst;
static void *dev;
static cudaStream_t stream;
static unsigned long long bad, errors, tag, counted_tag;
static uint64_t digest = 1469598103934665603ull;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static unsigned char pat(unsigned long long t, size_t i)
{
    return (unsigned char)((i * 131u + (i >> 11) * 7u + t * 29u) & 0xff);
}

/* One .cuda() and its check; counted in the digest when it is one of the -n. */
static void copy_once(int counted)
{
    cudaError_t e;

    /* The counted copies' patterns do not depend on how many others ran. */
    tag = counted ? ++counted_tag : tag + 1 + (1ull << 32);
    for (size_t i = 0; i < size; i++)
        src[i] = pat(tag, i);
    memset(dst, 0, size);
    e = cudaMemcpyAsync(dev, src, size, cudaMemcpyHostToDevice, stream);
    errors += e != cudaSuccess;
    e = cudaStreamSynchronize(stream);
    errors += e != cudaSuccess;
    memset(src, 0xee, size);         /* the source is the caller's again */
    e = cudaMemcpy(dst, dev, size, cudaMemcpyDeviceToHost);
    errors += e != cudaSuccess;
    for (size_t i = 0; i < size; i++) {
        if (dst[i] != pat(tag, i)) {
            bad++;
            break;
        }
    }
    if (counted)
        for (size_t i = 0; i < size; i += 4099)
            digest = (digest ^ dst[i]) * 1099511628211ull;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files in dir whose name starts with prefix. */
static int count(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static void touch(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    if (fd >= 0)
        close(fd);
}

/* Arrive at barrier what of ranks processes in dir, and wait for the
 * others: staging meanwhile (active in every count), or not. */
static void arrive(const char *dir, const char *what, int ranks, int copying)
{
    char path[4096];
    uint64_t t0 = now_ns();

    snprintf(path, sizeof path, "%s/%s.%d", dir, what, (int)getpid());
    touch(path);
    while (count(dir, what) < ranks) {
        if (now_ns() - t0 > WAIT_NS) {
            fprintf(stderr, "noderank: %s barrier: timed out\n", what);
            exit(2);
        }
        if (copying)
            copy_once(0);
        usleep(1000);
    }
}

/* -c: close the descriptors of pincache-node files, then open path in
 * their place with a line waiting in its stdio buffer (flushed by exit). */
static void take_fds(const char *path)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    char link[300], to[512];   /* "/proc/self/fd/" and a d_name of up to 255 bytes */
    int fds[64], n = 0, fd;
    FILE *f;

    while (d && (e = readdir(d)) != NULL && n < 64) {
        ssize_t len;
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        len = readlink(link, to, sizeof to - 1);
        if (len > 0) {
            to[len] = 0;
            if (strstr(to, "/pincache-node-v"))
                fds[n++] = atoi(e->d_name);
        }
    }
    if (d)
        closedir(d);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && n > 0 && fd != fds[0] && dup2(fd, fds[0]) == fds[0]) {
        close(fd);               /* exactly the number pincache had */
        fd = fds[0];
    }
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f)
        fprintf(f, "taken %d of %d closed\n", fd, n);
}

int main(int argc, char **argv)
{
    const char *bar = NULL, *mark = NULL, *until = NULL, *hold = NULL, *fork_how = NULL, *take = NULL;
    unsigned long long copies = 8, more_ms = 0;
    int ranks = 0, c;
    pid_t child = 0;
    uint64_t t0;

    while ((c = getopt(argc, argv, "s:n:b:N:m:u:t:w:f:c:")) != -1) {
        switch (c) {
        case 's': size = strtoull(optarg, NULL, 0) << (strchr(optarg, 'M') ? 20 : strchr(optarg, 'K') ? 10 : 0); break;
        case 'n': copies = strtoull(optarg, NULL, 0); break;
        case 'b': bar = optarg; break;
        case 'N': ranks = atoi(optarg); break;
        case 'm': mark = optarg; break;
        case 'u': until = optarg; break;
        case 't': more_ms = strtoull(optarg, NULL, 0); break;
        case 'w': hold = optarg; break;
        case 'f': fork_how = optarg; break;
        case 'c': take = optarg; break;
        default:
            fprintf(stderr, "usage: noderank [-s SIZE] [-n COPIES] [-b DIR -N RANKS] [-m FILE] [-u FILE] "
                            "[-t MS] [-w FILE] [-f sleep|exit]\n");
            return 2;
        }
    }
    src = malloc(size);
    dst = malloc(size);
    if (!src || !dst || cudaMalloc(&dev, size) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "noderank: set-up failed\n");
        return 2;
    }
    copy_once(0);
    if (fork_how) {
        pid_t p = child = fork();
        if (p == 0) {
            if (strcmp(fork_how, "exit") == 0)
                exit(0);
            sleep(10);
            _exit(0);
        }
        if (p < 0)
            errors++;
        if (p > 0 && strcmp(fork_how, "exit") == 0)
            waitpid(p, NULL, 0);
    }
    if (mark) {
        FILE *f = fopen(mark, "w");
        if (f) {
            if (child > 0)
                fprintf(f, "%d\n", (int)child);
            fclose(f);
        }
    }
    if (bar)
        arrive(bar, "ready", ranks, 1);
    if (until) {
        t0 = now_ns();
        while (!exists(until) && now_ns() - t0 < WAIT_NS)
            copy_once(0);
        t0 = now_ns();
        while (now_ns() - t0 < more_ms * 1000000ull)
            copy_once(0);
    }
    for (unsigned long long i = 0; i < copies; i++)
        copy_once(1);
    if (bar) {
        arrive(bar, "done", ranks, 1);
        arrive(bar, "bye", ranks, 0);    /* nobody leaves while another still stages */
    }
    if (hold) {
        t0 = now_ns();
        while (!exists(hold) && now_ns() - t0 < WAIT_NS) {
            copy_once(0);
            usleep(1000);
        }
    }
    if (take)
        take_fds(take);
    printf("copies=%llu bad=%llu errors=%llu digest=%016llx\n", copies, bad, errors, (unsigned long long)digest);
    cudaStreamDestroy(stream);
    cudaFree(dev);
    return bad || errors ? 1 : 0;
}
