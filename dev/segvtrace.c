/* segvtrace.c - TEST TOOL, preloaded only by dev/h200-forkdiag.sh: on
 * SIGSEGV/SIGBUS, print the faulting address and a native backtrace to
 * stderr, copy /proc/self/maps to $SEGVTRACE_DIR/maps.PID, then die of the
 * same signal.  Installed again in fork() children. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char st_dir[512];

static void st_handler(int sig, siginfo_t *si, void *uc)
{
    char b[768];
    void *f[64];
    int n, k, in, out;

    (void)uc;
    n = snprintf(b, sizeof b, "SEGVTRACE pid=%d sig=%d addr=%p\n", (int)getpid(), sig, si->si_addr);
    if (write(2, b, (size_t)n) < 0)
        _exit(128 + sig);
    k = backtrace(f, 64);
    backtrace_symbols_fd(f, k, 2);
    if (st_dir[0]) {
        snprintf(b, sizeof b, "%s/maps.%d", st_dir, (int)getpid());
        out = open(b, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        in = open("/proc/self/maps", O_RDONLY);
        while (in >= 0 && out >= 0 && (n = (int)read(in, b, sizeof b)) > 0)
            if (write(out, b, (size_t)n) < 0)
                break;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void st_install(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = st_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

__attribute__((constructor)) static void st_init(void)
{
    const char *d = getenv("SEGVTRACE_DIR");
    if (d)
        snprintf(st_dir, sizeof st_dir, "%s", d);
    st_install();
    pthread_atfork(NULL, NULL, st_install);
}
