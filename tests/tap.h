/* tap.h - a small TAP producer for pincache's C tests.
 *
 *   ok(cond, "name %d", i)      one test point
 *   is_int(got, want, "name")    integers, with a diagnostic on mismatch
 *   is_str(got, want, "name")    strings, likewise
 *   skip(n, "why")               n skipped points
 *   skip_all("why")              "1..0 # SKIP why" and exit 0
 *   diag("...")                  a "# ..." comment line
 *   return done_testing();       the trailing plan "1..N"; exit status 1 if anything failed
 *
 * Also capture_begin()/capture_end() (stderr) and capture_begin_fd(1)/
 * capture_end_fd(1, ...) (stdout): collect what the code under test writes
 * into a buffer, through a temporary file. */
#ifndef PC_TAP_H
#define PC_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAP_UNUSED __attribute__((unused))

static int tap_count;
static int tap_failures;

static TAP_UNUSED void tap_vline(const char *pre, const char *fmt, va_list ap)
{
    fputs(pre, stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
}

static TAP_UNUSED void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static TAP_UNUSED void diag(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    tap_vline("# ", fmt, ap);
    va_end(ap);
}

static TAP_UNUSED int tap_ok_(int pass, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static TAP_UNUSED int tap_ok_(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    char pre[64];

    tap_count++;
    if (!pass)
        tap_failures++;
    snprintf(pre, sizeof pre, "%sok %d - ", pass ? "" : "not ", tap_count);
    va_start(ap, fmt);
    tap_vline(pre, fmt, ap);
    va_end(ap);
    if (!pass)
        diag("  failed at %s:%d", file, line);
    return pass;
}

#define ok(cond, ...) tap_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                   \
    do {                                                                         \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);         \
        if (!tap_ok_(tap_g_ == tap_w_, __FILE__, __LINE__, __VA_ARGS__))         \
            diag("  got %lld, want %lld", tap_g_, tap_w_);                       \
    } while (0)

#define is_str(got, want, ...)                                                   \
    do {                                                                         \
        const char *tap_g_ = (got), *tap_w_ = (want);                            \
        int tap_p_ = tap_g_ && tap_w_ ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_; \
        if (!tap_ok_(tap_p_, __FILE__, __LINE__, __VA_ARGS__))                   \
            diag("  got '%s', want '%s'", tap_g_ ? tap_g_ : "(null)",            \
                 tap_w_ ? tap_w_ : "(null)");                                    \
    } while (0)

static TAP_UNUSED void skip(int n, const char *why)
{
    while (n-- > 0) {
        printf("ok %d # SKIP %s\n", ++tap_count, why);
        fflush(stdout);
    }
}

static TAP_UNUSED void skip_all(const char *why)
{
    printf("1..0 # SKIP %s\n", why);
    fflush(stdout);
    exit(0);
}

static TAP_UNUSED int done_testing(void)
{
    printf("1..%d\n", tap_count);
    fflush(stdout);
    return tap_failures ? 1 : 0;
}

/* ---- capturing a file descriptor --------------------------------------- */

/* Per captured descriptor (1 or 2), so both can be captured at once. */
static int tap_cap_saved[3] = { -1, -1, -1 };
static int tap_cap_fd[3] = { -1, -1, -1 };
static char tap_cap_path[3][256];

static TAP_UNUSED void capture_begin_fd(int target)
{
    const char *dir = getenv("TMPDIR");
    int fd;

    fflush(stdout);
    fflush(stderr);
    snprintf(tap_cap_path[target], sizeof tap_cap_path[target], "%s/pc_capture.XXXXXX",
             dir && *dir ? dir : "/tmp");
    fd = mkstemp(tap_cap_path[target]);
    if (fd < 0) {
        perror("mkstemp");
        exit(99);
    }
    tap_cap_saved[target] = dup(target);
    dup2(fd, target);
    tap_cap_fd[target] = fd;
}

/* Stop capturing target; what was written (NUL-terminated, at most n-1
 * bytes) goes to buf.  Returns its length. */
static TAP_UNUSED size_t capture_end_fd(int target, char *buf, size_t n)
{
    ssize_t r;
    size_t len = 0;
    int fd = tap_cap_fd[target];

    fflush(stdout);
    fflush(stderr);
    dup2(tap_cap_saved[target], target);
    close(tap_cap_saved[target]);
    lseek(fd, 0, SEEK_SET);
    while (len + 1 < n && (r = read(fd, buf + len, n - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fd);
    unlink(tap_cap_path[target]);
    tap_cap_fd[target] = tap_cap_saved[target] = -1;
    return len;
}

static TAP_UNUSED void capture_begin(void)
{
    capture_begin_fd(2);
}

static TAP_UNUSED size_t capture_end(char *buf, size_t n)
{
    return capture_end_fd(2, buf, n);
}

/* Non-overlapping occurrences of needle in hay. */
static TAP_UNUSED int count_str(const char *hay, const char *needle)
{
    int n = 0;
    size_t k = strlen(needle);

    if (!k)
        return 0;
    while ((hay = strstr(hay, needle))) {
        n++;
        hay += k;
    }
    return n;
}

#endif
