/* test_outfile.c - pc_write_file on what the end-to-end test
 * (tests/diag/outfile.sh) cannot set up for sure: a pipe whose reader is
 * gone (EPIPE, and no SIGPIPE killing the program at exit), a descriptor
 * named through /dev/fd, kinds of files that are refused, a failed write
 * that must leave the old file alone, and the mode of a new file. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "util/log.h"
#include "util/options.h"
#include "util/outfile.h"
#include "tap.h"

static char dir[] = "/tmp/pc_outfile.XXXXXX";
static char out[8192];

struct text { const char *s; int fail; };

static int emit_text(int fd, void *arg)
{
    const struct text *t = arg;
    int r = pc_write_all(fd, t->s, strlen(t->s));
    return r ? r : t->fail;
}

/* pc_write_file with stderr captured into out; returns its result. */
static int write_captured(const char *path, const char *s, int fail)
{
    struct text t = { s, fail };
    int r;

    pc_log_reset();
    capture_begin();
    r = pc_write_file(path, "report", emit_text, &t);
    capture_end(out, sizeof out);
    return r;
}

static void slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, buf, n - 1) : -1;

    buf[got > 0 ? got : 0] = '\0';
    if (fd >= 0)
        close(fd);
}

static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return n;
}

static void test_broken_pipe(void)
{
    char path[64];
    sigset_t pending;
    int p[2];

    if (pipe(p) != 0) {
        skip(3, "no pipe");
        return;
    }
    close(p[0]);              /* the reader left */
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[1]);
    /* Without the guard the default SIGPIPE action ends this test here. */
    is_int(write_captured(path, "{}\n", 0), -EPIPE, "reader gone: EPIPE, and the process lives on");
    ok(sigpending(&pending) == 0 && !sigismember(&pending, SIGPIPE), "no SIGPIPE left pending");
    is_int(count_str(out, "warning: cannot write the report to"), 1, "one warning");
    close(p[1]);
}

static void test_dev_fd(void)
{
    char path[64], buf[64];
    ssize_t n;
    int p[2];

    if (pipe(p) != 0) {
        skip(2, "no pipe");
        return;
    }
    snprintf(path, sizeof path, "/dev/fd/%d", p[1]);
    is_int(write_captured(path, "through\n", 0), 0, "/dev/fd/N: written");
    n = read(p[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    is_str(buf, "through\n", "/dev/fd/N: the bytes are in the pipe the descriptor is");
    close(p[0]);
    close(p[1]);
}

static void test_refused(void)
{
    char path[256], sub[256];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int s;

    snprintf(sub, sizeof sub, "%s/sub", dir);
    mkdir(sub, 0755);
    is_int(write_captured(sub, "x", 0), -EISDIR, "a directory: refused");
    is_int(count_str(out, "warning:"), 1, "a directory: one warning");

    snprintf(sa.sun_path, sizeof sa.sun_path, "%s/sock", dir);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, sizeof sa) == 0) {
        is_int(write_captured(sa.sun_path, "x", 0), -EINVAL, "a socket: refused");
        ok(strstr(out, "not a regular file, FIFO or character device") != NULL, "a socket: the warning says why");
    } else {
        skip(2, "no UNIX socket");
    }
    if (s >= 0)
        close(s);
    unlink(sa.sun_path);

    snprintf(path, sizeof path, "%s/loop", dir);
    if (symlink("loop", path) == 0) {
        is_int(write_captured(path, "x", 0), -ELOOP, "a link to itself: ELOOP");
        unlink(path);
    } else {
        skip(1, "no symlink");
    }
    rmdir(sub);
}

static void test_replace(void)
{
    char path[256], buf[256];
    struct stat st;
    mode_t mask = umask(022);

    snprintf(path, sizeof path, "%s/r.json", dir);
    is_int(write_captured(path, "first, the longer text\n", 0), 0, "a new file");
    if (stat(path, &st) != 0)
        st.st_mode = 0;
    is_int(st.st_mode & 0777, 0644, "mode 0644 less the umask 022");
    is_int(write_captured(path, "second\n", 0), 0, "a regular file: replaced");
    slurp(path, buf, sizeof buf);
    is_str(buf, "second\n", "replaced whole: nothing left of the longer old text");
    is_int(write_captured(path, "third, half written\n", -EIO), -EIO, "an emit error is returned");
    slurp(path, buf, sizeof buf);
    is_str(buf, "second\n", "an emit error leaves the old file as it was");
    is_int(entries(), 1, "no temporary file left behind");
    unlink(path);
    umask(mask);
}

int main(void)
{
    unsetenv("PINCACHE_LOG");
    pc_options_init();        /* warnings at the default level */
    if (!mkdtemp(dir))
        skip_all("mkdtemp failed");
    test_broken_pipe();
    test_dev_fd();
    test_refused();
    test_replace();
    rmdir(dir);
    return done_testing();
}
