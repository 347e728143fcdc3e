/* fdsafe.c - see fdsafe.h. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "util/fdsafe.h"

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
