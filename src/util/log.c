/* log.c - the one logger (the formatter behind it: fmt.c).
 *
 * Everything here may run inside an interposed CUDA call, in a fork child or
 * at exit after the runtime is gone: no malloc, no stdio, no locks.  Output
 * is one write(2) per message so lines from several threads do not mix. */
#include "config.h"
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/log.h"
#include "util/sigguard.h"

#define PC_LOG_BUF 512
#define PC_LOG_MAX_WARNINGS 100

/* initial-exec: a global-dynamic TLS access may call malloc on first use. */
static __thread int pc_log_busy __attribute__((tls_model("initial-exec")));

/* Warnings printed so far (atomic); past the limit they are dropped. */
static unsigned pc_log_warnings;

static const char *const pc_level_word[] = { "error: ", "warning: ", "info: ", "debug: " };

/* Into a pipe, FIFO, socket or terminal, what pincache writes waits at
 * most this long for room, a piece at a time: a reader that is alive but
 * never reads (a parent that reads its child's stderr only after the
 * child exits) must not hang the program's exit on the report, where
 * plainly it exited.  A piece of PIPE_BUF bytes fits whenever poll says
 * the pipe has room. */
#define PC_WRITE_WAIT_MS 2000
#define PC_WRITE_PIECE 4096

int pc_write_all(int fd, const void *buf, unsigned long n)
{
    struct pc_sigguard g;
    struct stat st;
    const char *p = buf;
    int r = 0, stream = fstat(fd, &st) == 0 && !S_ISREG(st.st_mode);

    pc_sigguard_begin(&g);   /* EPIPE or EFBIG, never a signal: sigguard.h */
    while (n) {
        unsigned long k = n;
        ssize_t w;

        if (stream) {
            struct pollfd pf = { .fd = fd, .events = POLLOUT };
            int ready;

            while ((ready = poll(&pf, 1, PC_WRITE_WAIT_MS)) < 0 && errno == EINTR)
                ;
            if (ready == 0) {
                r = -EAGAIN;     /* nobody reads: dropped, not waited for */
                break;
            }
            if (k > PC_WRITE_PIECE)
                k = PC_WRITE_PIECE;
        }
        w = write(fd, p, k);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            break;
        }
        if (w == 0) {
            r = -EIO;
            break;
        }
        p += w;
        n -= (size_t)w;
    }
    pc_sigguard_end(&g, -r);
    return r;
}

int pc_log_prefix(char *buf, unsigned long n, int level)
{
    if (level < PC_LOG_ERROR || level > PC_LOG_DEBUG)
        level = PC_LOG_ERROR;
    return pc_fmt(buf, n, "pincache[%d]: %s", (int)getpid(), pc_level_word[level]);
}

static void pc_vlog(int level, const char *fmt, va_list ap)
{
    char buf[PC_LOG_BUF];
    int saved = errno;    /* callers report CUDA errors; errno must survive us */
    size_t len;
    int r;

    if (pc_log_busy)
        return;
    pc_log_busy = 1;
    if (level == PC_LOG_WARN) {
        unsigned n = __atomic_add_fetch(&pc_log_warnings, 1, __ATOMIC_RELAXED);
        if (n > PC_LOG_MAX_WARNINGS) {
            if (n == PC_LOG_MAX_WARNINGS + 1) {
                len = (size_t)pc_log_prefix(buf, sizeof buf, level);
                len += (size_t)pc_fmt(buf + len, sizeof buf - len,
                                      "further warnings suppressed (more than %d)\n",
                                      PC_LOG_MAX_WARNINGS);
                pc_write_all(2, buf, len < sizeof buf ? len : sizeof buf - 1);
            }
            goto out;
        }
    }
    len = (size_t)pc_log_prefix(buf, sizeof buf, level);
    r = pc_vfmt(buf + len, sizeof buf - len, fmt, ap);
    if (len + (size_t)r > sizeof buf - 1) {
        /* Truncated: end visibly, and always with a newline. */
        len = sizeof buf - 1;
        memcpy(buf + len - 3, "...", 3);
    } else {
        len += (size_t)r;
        if (len && buf[len - 1] == '\n')
            len--;
    }
    buf[len++] = '\n';
    pc_write_all(2, buf, len);
out:
    pc_log_busy = 0;
    errno = saved;
}

static int pc_log_level = PC_LOG_ERROR;

void pc_log_set_level(int level)
{
    __atomic_store_n(&pc_log_level, level, __ATOMIC_RELAXED);
}

void pc_log(int level, const char *fmt, ...)
{
    va_list ap;

    if (level > __atomic_load_n(&pc_log_level, __ATOMIC_RELAXED))
        return;
    va_start(ap, fmt);
    pc_vlog(level, fmt, ap);
    va_end(ap);
}

void pc_log_once(int *flag, int level, const char *fmt, ...)
{
    va_list ap;

    if (level > __atomic_load_n(&pc_log_level, __ATOMIC_RELAXED) || __atomic_exchange_n(flag, 1, __ATOMIC_RELAXED))
        return;
    va_start(ap, fmt);
    pc_vlog(level, fmt, ap);
    va_end(ap);
}

void pc_log_reset(void)
{
    __atomic_store_n(&pc_log_warnings, 0, __ATOMIC_RELAXED);
}
