/* sigrun - run a command the way signals.sh needs, and say how it ended.
 *
 *   sigrun [--closed-stderr | --full-stderr] [--fsize BYTES] -- COMMAND ARGS...
 *
 * --closed-stderr: the command's stderr is a pipe whose reader is already
 * closed (a write there raises SIGPIPE); --full-stderr: a pipe filled to
 * the brim whose reader, sigrun, reads nothing until the command has
 * ended (a write there blocks); --fsize: its RLIMIT_FSIZE (a write or
 * truncate past it raises SIGXFSZ), its stderr then a pipe sigrun copies
 * to its own (so that the limit does not apply to what the command says).
 * Its stdout is sigrun's.  After 30 s the command is killed.  Prints
 * "exit N", "signal N" or "hung" on stdout, and with --full-stderr the
 * bytes the command wrote into the full pipe ("wrote N"); exit status 0,
 * or 2 when the command could not be run. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIMIT_S 30

/* Fill the pipe w until a write would block; the bytes written. */
static long fill(int w)
{
    static const char junk[4096];
    long n = 0;
    ssize_t k;
    int fl = fcntl(w, F_GETFL);

    fcntl(w, F_SETFL, fl | O_NONBLOCK);
    while ((k = write(w, junk, sizeof junk)) > 0)
        n += k;
    while ((k = write(w, junk, 1)) > 0)
        n += k;
    fcntl(w, F_SETFL, fl);
    return n;
}

/* The command's status, waited for at most LIMIT_S; -1: it was killed. */
static int wait_bounded(pid_t pid, int *st)
{
    struct timespec ms = { 0, 10000000 };

    for (int i = 0; i < LIMIT_S * 100; i++) {
        if (waitpid(pid, st, WNOHANG) == pid)
            return 0;
        nanosleep(&ms, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, st, 0);
    return -1;
}

int main(int argc, char **argv)
{
    int closed = 0, full = 0, i, st, fds[2], errp[2] = { -1, -1 };
    long long fsize = -1, filled = 0;
    pid_t pid;

    for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--closed-stderr"))
            closed = 1;
        else if (!strcmp(argv[i], "--full-stderr"))
            full = 1;
        else if (!strcmp(argv[i], "--fsize") && i + 1 < argc)
            fsize = atoll(argv[++i]);
        else
            return 2;
    }
    if (i + 1 >= argc)
        return 2;
    if ((closed || full) && pipe(fds) != 0)
        return 2;
    if (closed && close(fds[0]) != 0)
        return 2;
    if (full)
        filled = fill(fds[1]);
    if (!closed && !full && fsize >= 0 && pipe(errp) != 0)
        return 2;
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        /* The command starts with the default dispositions, as from a shell. */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        if ((closed || full) && dup2(fds[1], 2) < 0)
            _exit(126);
        if (full)
            close(fds[0]);
        if (errp[1] >= 0 && (dup2(errp[1], 2) < 0 || close(errp[0]) != 0 || close(errp[1]) != 0))
            _exit(126);
        if (fsize >= 0) {
            struct rlimit rl = { (rlim_t)fsize, RLIM_INFINITY };
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                _exit(126);
        }
        execvp(argv[i + 1], argv + i + 1);
        _exit(127);
    }
    if (closed || full)
        close(fds[1]);
    if (errp[0] >= 0) {
        char buf[4096];
        ssize_t r;

        close(errp[1]);
        while ((r = read(errp[0], buf, sizeof buf)) > 0)
            if (write(2, buf, (size_t)r) != r)
                break;
        close(errp[0]);
    }
    if (wait_bounded(pid, &st) != 0)
        printf("hung\n");
    else if (WIFSIGNALED(st))
        printf("signal %d\n", WTERMSIG(st));
    else
        printf("exit %d\n", WEXITSTATUS(st));
    if (full) {
        char buf[4096];
        long long got = 0;
        ssize_t r;

        while ((r = read(fds[0], buf, sizeof buf)) > 0)
            got += r;
        printf("wrote %lld\n", got - filled);
    }
    return 0;
}
