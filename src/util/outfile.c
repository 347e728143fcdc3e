/* outfile.c - write a report or a trace where the user asked, safely.
 *
 * pincache may run as root and writes at exit into paths taken from the
 * environment, often in shared folders such as /tmp.  So: a new file only
 * under an unpredictable name, created O_EXCL|O_NOFOLLOW (a link planted
 * there cannot redirect it); a rename only over a regular file or nothing;
 * links, FIFOs and terminals written through, never replaced.  Runs after
 * the CUDA runtime may be gone: system calls and stack buffers only. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>      /* rename() only: no stdio streams here */
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/fdsafe.h"
#include "util/log.h"
#include "util/outfile.h"

#define PC_OUTFILE_MAX_LINKS 40      /* as the kernel's own limit (ELOOP) */

typedef int (*pc_emit_fn)(int fd, void *arg);

/* The paths, off the stack: the report and the trace are written on the
 * thread that calls exit(), whose stack may be the least pthreads allows
 * (16 KiB).  One file is written at a time (pc_dtor's report, then its
 * trace, once per process; the CLI). */
static struct {
    char tmp[PC_OUTFILE_PATH_MAX + 96];      /* pc_write_replace's new file */
    char text[PC_OUTFILE_PATH_MAX];          /* pc_follow's link */
    char hop[2][PC_OUTFILE_PATH_MAX];        /* pc_write_any's path, link by link */
} pc_scratch;

static const char *pc_errname(int err)
{
#if defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 32)
    /* Untranslated and static: strerror may allocate for a locale. */
    const char *s = strerrordesc_np(err);
    if (s)
        return s;
#endif
#endif
    (void)err;
    return "error";
}

/* "N" at the end of a /proc/self/fd/ or /dev/fd/ path: the descriptor
 * /dev/stderr and friends stand for; -1 otherwise.  Those links read back
 * as "pipe:[...]" or the name of whatever fd N is (a log file, a terminal),
 * which must be written where fd N stands, not replaced. */
static int pc_self_fd(const char *p)
{
    static const char *const dirs[] = { "/proc/self/fd/", "/dev/fd/", "/proc/thread-self/fd/" };
    size_t i, n;
    long fd = 0;

    for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        n = strlen(dirs[i]);
        if (strncmp(p, dirs[i], n) != 0 || !p[n])
            continue;
        for (p += n; *p >= '0' && *p <= '9' && fd < 1000000; p++)
            fd = fd * 10 + (*p - '0');
        return *p ? -1 : (int)fd;
    }
    return -1;
}

/* Unpredictable name characters: getrandom, or where the kernel has none
 * (seccomp, old kernels) a mix of the clock, the pid and a stack address.
 * O_EXCL|O_NOFOLLOW keeps the file safe either way; the name only makes a
 * collision unlikely. */
void pc_random_chars(char *out, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char b[32];
    size_t i;

    if (n > sizeof b)
        n = sizeof b;
    if (getrandom(b, n, GRND_NONBLOCK) != (ssize_t)n) {
        struct timespec ts;
        uint64_t x;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
            (uint64_t)(uintptr_t)&ts;
        for (i = 0; i < n; i++) {            /* splitmix64 steps */
            uint64_t z = (x += 0x9e3779b97f4a7c15ull);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
            b[i] = (unsigned char)(z ^ (z >> 31));
        }
    }
    for (i = 0; i < n; i++)
        out[i] = abc[b[i] % (sizeof abc - 1)];
    out[n] = '\0';
}

/* Write path whole or not at all: a new file beside it, then a rename.
 * path is missing or was a regular file when looked at. */
static int pc_write_replace(const char *path, pc_emit_fn emit, void *arg)
{
    char *tmp = pc_scratch.tmp, rnd[13];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    int fd = -1, r, tries;

    for (tries = 0; tries < 16 && fd < 0; tries++) {
        pc_random_chars(rnd, 12);
        /* ".NAME.RANDOM.tmp" beside path; the name cut so that it fits NAME_MAX */
        if ((unsigned long)pc_fmt(tmp, sizeof pc_scratch.tmp, "%.*s.%.64s.%s.tmp", dirlen, path, base, rnd) >=
            sizeof pc_scratch.tmp)
            return -ENAMETOOLONG;
        fd = pc_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0644);
        if (fd < 0 && errno != EEXIST)
            return -errno;
    }
    if (fd < 0)
        return -EEXIST;
    r = emit(fd, arg);
    if (close(fd) != 0 && !r)
        r = -errno;
    if (!r && rename(tmp, path) != 0)
        r = -errno;
    if (r)
        unlink(tmp);
    return r;
}

/* Write into a FIFO or a character device that exists (path may be a
 * /proc magic link to one).  Never blocks in open: a FIFO without a reader
 * is an error (ENXIO), not a hang at exit.  *wrong_kind: it is neither. */
static int pc_write_through(const char *path, int nofollow, pc_emit_fn emit, void *arg,
                            int *wrong_kind)
{
    struct stat st;
    int fd, fl, r;

    fd = pc_open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_NOCTTY | (nofollow ? O_NOFOLLOW : 0), 0);
    if (fd < 0)
        return -errno;
    /* What was opened, not what was looked at: a path swapped for a regular
     * file in between is left alone (nothing was written or truncated). */
    if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))) {
        close(fd);
        *wrong_kind = 1;
        return -EINVAL;
    }
    fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    r = emit(fd, arg);   /* a reader gone: EPIPE, no SIGPIPE (pc_write_all) */
    if (close(fd) != 0 && !r)
        r = -errno;
    return r;
}

/* next = where the link at cur points: its text, relative to cur's folder. */
static int pc_follow(const char *cur, char *next, size_t n)
{
    char *text = pc_scratch.text;
    const char *slash = strrchr(cur, '/');
    ssize_t len = readlink(cur, text, sizeof pc_scratch.text);

    if (len < 0)
        return -errno;
    if ((size_t)len >= sizeof pc_scratch.text)
        return -ENAMETOOLONG;
    text[len] = '\0';
    if (text[0] == '/' || !slash)
        len = pc_fmt(next, n, "%s", text);
    else
        len = pc_fmt(next, n, "%.*s%s", (int)(slash - cur) + 1, cur, text);
    return (size_t)len < n ? 0 : -ENAMETOOLONG;
}

/* *wrong_kind: path is not a kind of file pincache writes. */
static int pc_write_any(const char *path, pc_emit_fn emit, void *arg, int *wrong_kind)
{
    char (*buf)[PC_OUTFILE_PATH_MAX] = pc_scratch.hop;
    const char *cur = path;
    struct stat st;
    int hop, fd, r;

    if (!path || !*path)
        return -EINVAL;
    if (strlen(path) >= PC_OUTFILE_PATH_MAX)
        return -ENAMETOOLONG;
    for (hop = 0; hop <= PC_OUTFILE_MAX_LINKS; hop++) {
        if ((fd = pc_self_fd(cur)) >= 0)
            return fcntl(fd, F_GETFD) < 0 ? -EBADF : emit(fd, arg);
        if (lstat(cur, &st) != 0)
            return errno == ENOENT ? pc_write_replace(cur, emit, arg) : -errno;
        if (S_ISREG(st.st_mode))
            return pc_write_replace(cur, emit, arg);
        if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))
            return pc_write_through(cur, 1, emit, arg, wrong_kind);
        if (S_ISDIR(st.st_mode))
            return -EISDIR;
        if (!S_ISLNK(st.st_mode)) {
            *wrong_kind = 1;
            return -EINVAL;
        }
        /* Other /proc links name no real file ("pipe:[...]"): open them. */
        if (strncmp(cur, "/proc/", 6) == 0)
            return pc_write_through(cur, 0, emit, arg, wrong_kind);
        r = pc_follow(cur, buf[hop & 1], sizeof buf[0]);
        if (r)
            return r;
        cur = buf[hop & 1];
    }
    return -ELOOP;
}

int pc_write_file(const char *path, const char *what, int (*emit)(int fd, void *arg), void *arg)
{
    int wrong_kind = 0;
    int r = pc_write_any(path, emit, arg, &wrong_kind);

    if (wrong_kind)
        pc_warn("cannot write the %s to %s: not a regular file, FIFO or character device", what, path);
    else if (r)
        pc_warn("cannot write the %s to %s: %s", what, path ? path : "", pc_errname(-r));
    else
        pc_info("%s written to %s", what, path);
    return r;
}
