/* sigrun - run a command the way signals.sh needs, and say how it ended.
 *
 *   sigrun [--closed-stderr] [--fsize BYTES] -- COMMAND ARGS...
 *
 * --closed-stderr: the command's stderr is a pipe whose reader is already
 * closed (a write there raises SIGPIPE); --fsize: its RLIMIT_FSIZE (a write
 * or truncate past it raises SIGXFSZ), its stderr then a pipe sigrun copies
 * to its own (so that the limit does not apply to what the command says).
 * Its stdout is sigrun's.  Prints
 * "exit N" or "signal N" on stdout; exit status 0, or 2 when the command
 * could not be run. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int closed = 0, i, st, fds[2], errp[2] = { -1, -1 };
    long long fsize = -1;
    pid_t pid;

    for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--closed-stderr"))
            closed = 1;
        else if (!strcmp(argv[i], "--fsize") && i + 1 < argc)
            fsize = atoll(argv[++i]);
        else
            return 2;
    }
    if (i + 1 >= argc)
        return 2;
    if (closed && (pipe(fds) != 0 || close(fds[0]) != 0))
        return 2;
    if (!closed && fsize >= 0 && pipe(errp) != 0)
        return 2;
    fflush(stdout);
    pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        /* The command starts with the default dispositions, as from a shell. */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        if (closed && dup2(fds[1], 2) < 0)
            _exit(126);
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
    if (closed)
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
    if (waitpid(pid, &st, 0) != pid)
        return 2;
    if (WIFSIGNALED(st))
        printf("signal %d\n", WTERMSIG(st));
    else
        printf("exit %d\n", WEXITSTATUS(st));
    return 0;
}
