/* sigguard.c - see sigguard.h. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include "util/sigguard.h"

void pc_sigguard_begin(struct pc_sigguard *g)
{
    sigset_t set, pending;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigaddset(&set, SIGXFSZ);
    g->had_pipe = g->had_xfsz = 0;
    g->on = pthread_sigmask(SIG_BLOCK, &set, &g->old) == 0;
    if (g->on && sigpending(&pending) == 0) {
        g->had_pipe = sigismember(&pending, SIGPIPE) == 1;
        g->had_xfsz = sigismember(&pending, SIGXFSZ) == 1;
    }
}

static void pc_sigguard_take(int sig)
{
    static const struct timespec zero;
    sigset_t one;

    sigemptyset(&one);
    sigaddset(&one, sig);
    while (sigtimedwait(&one, NULL, &zero) < 0 && errno == EINTR)
        ;
}

void pc_sigguard_end(struct pc_sigguard *g, int err)
{
    int saved = errno;

    if (!g->on)
        return;
    if (err == EPIPE && !g->had_pipe)
        pc_sigguard_take(SIGPIPE);
    if (err == EFBIG && !g->had_xfsz)
        pc_sigguard_take(SIGXFSZ);
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    g->on = 0;
    errno = saved;
}

int pc_fsize_allows(uint64_t size)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1;
    return size <= (uint64_t)rl.rlim_cur;
}
