/* fdsafe.c - see fdsafe.h. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "util/fdsafe.h"
#include "util/fmt.h"

int pc_fd_off_stdio(int fd)
{
    int high, err;

    if (fd < 0 || fd > 2)
        return fd;
    high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    err = errno;
    close(fd);
    errno = err;
    return high;
}

int pc_open(const char *path, int flags, unsigned mode)
{
    return pc_fd_off_stdio(open(path, flags | O_CLOEXEC, (mode_t)mode));
}

void pc_read_small(const char *path, char *buf, size_t n)
{
    ssize_t got = -1;
    int fd;

    if (!n)
        return;
    fd = pc_open(path, O_RDONLY | O_NOCTTY, 0);
    if (fd >= 0) {
        do
            got = read(fd, buf, n - 1);
        while (got < 0 && errno == EINTR);
        close(fd);
    }
    buf[got > 0 ? got : 0] = '\0';
}

/* getdents64's record (not in every libc's headers). */
struct pc_dirent64 {
    unsigned long long ino;
    long long off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

void pc_fd_close_memfds(const char *name)
{
    char want[96], path[40], link[96];
    long buf[256];           /* 2 KiB of records, aligned */
    long n;
    int dir;

    if ((size_t)pc_fmt(want, sizeof want, "/memfd:%s (deleted)", name) >= sizeof want)
        return;
    dir = pc_open("/proc/self/fd", O_RDONLY | O_DIRECTORY, 0);
    if (dir < 0)
        return;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            const struct pc_dirent64 *d = (const struct pc_dirent64 *)((char *)buf + at);
            const char *p = d->name;
            int fd = 0;
            ssize_t len;

            at += d->reclen;
            for (; *p >= '0' && *p <= '9' && fd < 1 << 24; p++)
                fd = fd * 10 + (*p - '0');
            if (*p || p == d->name || fd == dir)
                continue;
            pc_fmt(path, sizeof path, "/proc/self/fd/%d", fd);
            len = readlink(path, link, sizeof link - 1);
            if (len <= 0)
                continue;
            link[len] = '\0';
            if (strcmp(link, want) == 0)
                close(fd);
        }
    }
    close(dir);
}
