/* test_log.c - pc_fmt against snprintf, and the logger's contract: prefix,
 * levels, one write per line, truncation, rate limit, errno. */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util/log.h"
#include "util/options.h"
#include "tap.h"

static char out[1 << 20];
static char prefix[64];

/* pc_fmt and snprintf must agree on the shared subset. */
#define SAME(fmt, ...)                                                           \
    do {                                                                         \
        char a_[256], b_[256];                                                   \
        int ra_ = pc_fmt(a_, sizeof a_, fmt, __VA_ARGS__);                       \
        int rb_ = snprintf(b_, sizeof b_, fmt, __VA_ARGS__);                     \
        if (!ok(ra_ == rb_ && strcmp(a_, b_) == 0, "pc_fmt(\"%s\") like snprintf", fmt)) \
            diag("  got '%s' (%d), want '%s' (%d)", a_, ra_, b_, rb_);           \
    } while (0)

static void test_fmt_like_snprintf(void)
{
    int x = 0;

    SAME("%d", 0);
    SAME("%d", -5);
    SAME("%d|%i", INT_MIN, INT_MAX);
    SAME("%u", UINT_MAX);
    SAME("%ld", LONG_MIN);
    SAME("%lu", ULONG_MAX);
    SAME("%lld", LLONG_MIN);
    SAME("%llu", ULLONG_MAX);
    SAME("%zu", (size_t)123456789);
    SAME("%x %X", 255u, 0xbeefu);
    SAME("%lx", 0xdeadbeefcafeul);
    SAME("%p", (void *)&x);
    SAME("%c%c", 'a', 'Z');
    SAME("100%% %s", "done");
    SAME("%s", "");
    SAME("%.3s|", "abcdef");
    SAME("%.*s|", 2, "abcdef");
    SAME("%5d|%-5d|%05d", 42, 42, -42);
    SAME("%*d|%-*d", 6, 7, 6, 7);
    SAME("%8s|%-8s|", "ab", "cd");
    SAME("%+d % d", 3, 3);
    SAME("%.5d|%8.3d", 42, 7);
    SAME("%.0d|", 0);
    SAME("%.2f", 3.14159);
    SAME("%.1f", 0.05);
    SAME("%.3f", -1.0005);
    SAME("%.4f", 0.9950);
    SAME("%f", 1234.5678);
    SAME("%.0f", 7.4);
    SAME("%8.2f|%-8.2f|%08.2f", 3.14159, 2.5, -1.25);
    SAME("%.9f", 0.123456789);
    SAME("%.1f", 1e17);
    SAME("%.2f", 0.0);
    SAME("[%s] [%d] [%.1f] [%c]", "mixed", -1, 9.99, '!');
}

static void test_fmt_own(void)
{
    char b[64];
    const char *volatile null_str = NULL;   /* hidden from -Wformat-overflow */
    int r;

    pc_fmt(b, sizeof b, "%s", null_str);
    is_str(b, "(null)", "NULL string");
    pc_fmt(b, sizeof b, "%p", (void *)NULL);
    is_str(b, "(nil)", "NULL pointer");
    pc_fmt(b, sizeof b, "%'llu", 1234567ull);
    is_str(b, "1,234,567", "thousands separators");
    pc_fmt(b, sizeof b, "%'d|%'u|%'d", -1000, 999u, 0);
    is_str(b, "-1,000|999|0", "separators: negative, short, zero");
    pc_fmt(b, sizeof b, "%'llu", ULLONG_MAX);
    is_str(b, "18,446,744,073,709,551,615", "separators: largest value");
    pc_fmt(b, sizeof b, "%'12llu|", 1234ull);
    is_str(b, "       1,234|", "separators with a width");
    pc_fmt(b, sizeof b, "%'.1f", 1234567.24);
    is_str(b, "1,234,567.2", "separators in a double");
    pc_fmt(b, sizeof b, "%.1f|%.1f|%.1f", 1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0);
    is_str(b, "inf|-inf|nan", "inf and nan");
    pc_fmt(b, sizeof b, "%.1f", 1e20);
    is_str(b, "100000000000000000000.0", "doubles beyond 64 bits");
    pc_fmt(b, sizeof b, "%.12f", 0.5);
    is_str(b, "0.500000000", "precision capped at 9");
    pc_fmt(b, sizeof b, "%.2f", 0.999);
    is_str(b, "1.00", "rounding carries into the integer part");

    r = pc_fmt(b, 5, "%s", "abcdefgh");
    ok(r == 8 && !strcmp(b, "abcd"), "truncation: NUL-terminated, returns the full length");
    b[0] = 'X';
    r = pc_fmt(b, 0, "%d", 12345);
    ok(r == 5 && b[0] == 'X', "size 0: nothing written");
    r = pc_fmt(b, 1, "%d", 12345);
    ok(r == 5 && b[0] == '\0', "size 1: empty string");
    r = pc_fmt(b, 4, "%'llu", 1234567ull);
    ok(r == 9 && !strcmp(b, "1,2"), "truncation inside a number");

    /* Not printf's business here: unknown conversions come out as written. */
    {
        const char *unk = "a %q b";
        const char *trail = "50%";
        pc_fmt(b, sizeof b, unk, 0);
        is_str(b, "a %q b", "unknown conversion kept literally");
        pc_fmt(b, sizeof b, trail, 0);
        is_str(b, "50%", "trailing %% kept");
    }
}

static int log_lines(void)
{
    capture_end(out, sizeof out);
    return count_str(out, "\n");
}

static void test_logger(void)
{
    char want[512];
    char big[2000];
    int i, n;

    pc_log_set_level(PC_LOG_WARN);
    pc_log_reset();

    capture_begin();
    pc_warn("hello %d", 42);
    is_int(log_lines(), 1, "a warning is one line");
    snprintf(want, sizeof want, "%swarning: hello 42\n", prefix);
    is_str(out, want, "prefix, level word, message, newline");

    capture_begin();
    pc_error("bad %s", "thing");
    pc_info("not shown");
    pc_debug("not shown");
    is_int(log_lines(), 1, "level warn: error shown, info and debug not");
    snprintf(want, sizeof want, "%serror: bad thing\n", prefix);
    is_str(out, want, "error line");

    pc_log_set_level(PC_LOG_DEBUG);
    capture_begin();
    pc_info("i");
    pc_debug("d");
    log_lines();
    snprintf(want, sizeof want, "%sinfo: i\n%sdebug: d\n", prefix, prefix);
    is_str(out, want, "level debug: info and debug words");

    pc_log_set_level(PC_LOG_ERROR);
    capture_begin();
    pc_warn("w");
    pc_error("e");
    is_int(log_lines(), 1, "level error: warnings dropped");
    pc_log_set_level(PC_LOG_WARN);

    capture_begin();
    pc_warn("ends with newline\n");
    is_int(log_lines(), 1, "a trailing newline is not doubled");

    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    capture_begin();
    pc_warn("%s", big);
    n = log_lines();
    is_int(n, 1, "a long message is still one line");
    is_int(strlen(out), 512, "cut at the 512-byte buffer");
    ok(strlen(out) >= 4 && !strcmp(out + strlen(out) - 4, "...\n"), "a cut line ends with ...");

    errno = ENOENT;
    capture_begin();
    pc_warn("errno kept");
    log_lines();
    is_int(errno, ENOENT, "errno survives a log call");

    {
        static int once;
        capture_begin();
        for (i = 0; i < 3; i++)
            pc_log_once(&once, PC_LOG_WARN, "only once");
        is_int(log_lines(), 1, "pc_log_once prints once");
    }
    {
        static int once2;
        pc_log_set_level(PC_LOG_ERROR);
        capture_begin();
        pc_log_once(&once2, PC_LOG_WARN, "filtered");
        pc_log_set_level(PC_LOG_WARN);
        pc_log_once(&once2, PC_LOG_WARN, "later");
        log_lines();
        ok(strstr(out, "later") != NULL, "a filtered pc_log_once does not use up its one message");
    }
}

static void test_rate_limit(void)
{
    int i;

    pc_log_set_level(PC_LOG_WARN);
    pc_log_reset();
    capture_begin();
    for (i = 0; i < 250; i++)
        pc_warn("w%d", i);
    pc_error("errors are not limited");
    log_lines();
    is_int(count_str(out, "warning: w"), 100, "100 warnings printed");
    is_int(count_str(out, "further warnings suppressed"), 1, "then one suppression line");
    is_int(count_str(out, "error: errors are not limited"), 1, "errors still printed");
    ok(strstr(out, "warning: w99\n") && !strstr(out, "warning: w100\n"), "the first 100 are kept");
    pc_log_reset();
}

#define NTHREADS 4
#define PER_THREAD 200

static void *logger_thread(void *arg)
{
    int t = (int)(intptr_t)arg, i;

    for (i = 0; i < PER_THREAD; i++)
        pc_error("thread %d message %d with some padding to make the line longer", t, i);
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[NTHREADS];
    int i, intact = 0;
    const char *p;

    capture_begin();
    for (i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, logger_thread, (void *)(intptr_t)i);
    for (i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    log_lines();
    for (p = out; *p;) {
        const char *nl = strchr(p, '\n');
        if (!nl)
            break;
        if (!strncmp(p, prefix, strlen(prefix)) &&
            !strncmp(p + strlen(prefix), "error: thread ", 14) && !strncmp(nl - 11, "line longer", 11))
            intact++;
        p = nl + 1;
    }
    is_int(intact, NTHREADS * PER_THREAD, "concurrent messages: every line whole");
}

int main(void)
{
    snprintf(prefix, sizeof prefix, "pincache[%d]: ", (int)getpid());
    test_fmt_like_snprintf();
    test_fmt_own();
    test_logger();
    test_rate_limit();
    test_threads();
    return done_testing();
}
