/* fmt.c - the allocation-free formatter behind the logger, the report and
 * the trace (see fmt.h), and the one case-insensitive compare.
 *
 * Runs inside interposed CUDA calls, in fork children and at exit after the
 * runtime is gone: no malloc, no stdio, no locale. */
#include "config.h"
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include "util/fmt.h"

struct pc_out {
    char *buf;
    size_t cap;   /* bytes available, including the NUL */
    size_t len;   /* bytes the full output needs (snprintf semantics) */
};

static void pc_put(struct pc_out *o, char c)
{
    if (o->len + 1 < o->cap)
        o->buf[o->len] = c;
    o->len++;
}

static void pc_put_n(struct pc_out *o, char c, int n)
{
    while (n-- > 0)
        pc_put(o, c);
}

static void pc_put_s(struct pc_out *o, const char *s, size_t n)
{
    while (n--)
        pc_put(o, *s++);
}

enum { F_LEFT = 1, F_ZERO = 2, F_GROUP = 4, F_PLUS = 8, F_SPACE = 16 };

/* Lay out sign + body with width padding, as printf does. */
static void pc_put_field(struct pc_out *o, const char *sign, const char *body, size_t blen,
                         int flags, int width, int zeros)
{
    int slen = (int)strlen(sign);
    int pad = width - slen - zeros - (int)blen;

    if (!(flags & F_LEFT) && !(flags & F_ZERO))
        pc_put_n(o, ' ', pad);
    pc_put_s(o, sign, (size_t)slen);
    if (!(flags & F_LEFT) && (flags & F_ZERO))
        pc_put_n(o, '0', pad);
    pc_put_n(o, '0', zeros);
    pc_put_s(o, body, blen);
    if (flags & F_LEFT)
        pc_put_n(o, ' ', pad);
}

/* Digits of v in base 8/10/16 into the end of tmp; returns the start. */
static char *pc_utoa(char *end, unsigned long long v, unsigned base, int upper, int group)
{
    const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char *p = end;
    int n = 0;

    do {
        if (group && n && n % 3 == 0)
            *--p = ',';
        *--p = dig[v % base];
        v /= base;
        n++;
    } while (v);
    return p;
}

static void pc_put_int(struct pc_out *o, unsigned long long mag, int neg, unsigned base,
                       int upper, int flags, int width, int prec)
{
    char tmp[48];
    char *end = tmp + sizeof tmp;
    char *p;
    const char *sign = neg ? "-" : (flags & F_PLUS) ? "+" : (flags & F_SPACE) ? " " : "";
    size_t blen;
    int zeros = 0;

    if (prec == 0 && mag == 0) {
        p = end;                               /* "%.0d" of 0 prints nothing */
    } else {
        p = pc_utoa(end, mag, base, upper, (flags & F_GROUP) && base == 10);
    }
    blen = (size_t)(end - p);
    if (prec >= 0) {
        flags &= ~F_ZERO;                      /* a precision disables 0-padding */
        if ((int)blen < prec)
            zeros = prec - (int)blen;
    }
    pc_put_field(o, sign, p, blen, flags, width, zeros);
}

/* %.Nf without libm or stdio; precision is capped at 9 digits. */
static void pc_put_double(struct pc_out *o, double x, int flags, int width, int prec)
{
    static const unsigned long long pow10[] = {
        1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
        100000000ull, 1000000000ull };
    char tmp[80];
    char *end = tmp + sizeof tmp;
    char *p = end;
    int neg = 0;
    unsigned long long ip, fp = 0;
    int scale = 0;
    const char *sign;

    if (prec < 0)
        prec = 6;
    if (prec > 9)
        prec = 9;
    if (x != x) {
        pc_put_field(o, "", "nan", 3, flags & ~F_ZERO, width, 0);
        return;
    }
    if (x < 0 || (x == 0 && 1 / x < 0)) {
        neg = 1;
        x = -x;
    }
    sign = neg ? "-" : (flags & F_PLUS) ? "+" : (flags & F_SPACE) ? " " : "";
    if (x > 1.7976931348623157e308) {
        pc_put_field(o, sign, "inf", 3, flags & ~F_ZERO, width, 0);
        return;
    }
    /* Keep the integer part within 64 bits; beyond that print the leading
     * digits followed by zeros (the double has no more precision anyway). */
    while (x >= 1e18) {
        x /= 10;
        scale++;
    }
    ip = (unsigned long long)x;
    if (!scale) {
        double f = (x - (double)ip) * (double)pow10[prec] + 0.5;
        fp = (unsigned long long)f;
        if (fp >= pow10[prec]) {
            fp -= pow10[prec];
            ip++;
        }
    }
    if (prec > 0) {
        int i;
        for (i = 0; i < prec; i++) {
            *--p = (char)('0' + fp % 10);
            fp /= 10;
        }
        *--p = '.';
    }
    while (scale-- > 0)
        *--p = '0';
    p = pc_utoa(p, ip, 10, 0, (flags & F_GROUP) != 0);
    pc_put_field(o, sign, p, (size_t)(end - p), flags, width, 0);
}

int pc_vfmt(char *buf, unsigned long n, const char *fmt, __builtin_va_list ap)
{
    struct pc_out o = { buf, n, 0 };
    va_list args;

    va_copy(args, ap);
    while (*fmt) {
        int flags = 0, width = 0, prec = -1, lng = 0;
        const char *start = fmt;

        if (*fmt != '%') {
            pc_put(&o, *fmt++);
            continue;
        }
        fmt++;
        for (;; fmt++) {
            if (*fmt == '-')
                flags |= F_LEFT;
            else if (*fmt == '0')
                flags |= F_ZERO;
            else if (*fmt == '\'')
                flags |= F_GROUP;
            else if (*fmt == '+')
                flags |= F_PLUS;
            else if (*fmt == ' ')
                flags |= F_SPACE;
            else
                break;
        }
        if (*fmt == '*') {
            width = va_arg(args, int);
            if (width < 0) {
                flags |= F_LEFT;
                width = -width;
            }
            fmt++;
        } else {
            while (*fmt >= '0' && *fmt <= '9')
                width = width * 10 + (*fmt++ - '0');
        }
        if (*fmt == '.') {
            fmt++;
            prec = 0;
            if (*fmt == '*') {
                prec = va_arg(args, int);
                fmt++;
            } else {
                while (*fmt >= '0' && *fmt <= '9')
                    prec = prec * 10 + (*fmt++ - '0');
            }
        }
        /* Length: 'l' once = long, twice = long long; z, j, t are 64-bit on
         * the LP64 targets CUDA supports; h/hh values arrive promoted. */
        for (;; fmt++) {
            if (*fmt == 'l')
                lng++;
            else if (*fmt == 'z' || *fmt == 'j' || *fmt == 't')
                lng = 2;
            else if (*fmt != 'h')
                break;
        }
        switch (*fmt) {
        case 'd':
        case 'i': {
            long long v = lng >= 2 ? va_arg(args, long long)
                        : lng == 1 ? va_arg(args, long) : va_arg(args, int);
            unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            pc_put_int(&o, mag, v < 0, 10, 0, flags, width, prec);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            unsigned long long v = lng >= 2 ? va_arg(args, unsigned long long)
                                 : lng == 1 ? va_arg(args, unsigned long) : va_arg(args, unsigned);
            pc_put_int(&o, v, 0, *fmt == 'u' ? 10 : 16, *fmt == 'X', flags, width, prec);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(args, void *);
            if (!v) {
                pc_put_field(&o, "", "(nil)", 5, flags & F_LEFT, width, 0);
            } else {
                char tmp[24];
                char *p = pc_utoa(tmp + sizeof tmp, v, 16, 0, 0);
                pc_put_field(&o, "0x", p, (size_t)(tmp + sizeof tmp - p), flags & F_LEFT, width, 0);
            }
            break;
        }
        case 'c': {
            char c = (char)va_arg(args, int);
            pc_put_field(&o, "", &c, 1, flags & F_LEFT, width, 0);
            break;
        }
        case 's': {
            const char *s = va_arg(args, const char *);
            size_t len = 0;
            if (!s)
                s = "(null)";
            while (s[len] && (prec < 0 || len < (size_t)prec))
                len++;
            pc_put_field(&o, "", s, len, flags & F_LEFT, width, 0);
            break;
        }
        case 'f':
        case 'F':
            pc_put_double(&o, va_arg(args, double), flags, width, prec);
            break;
        case '%':
            pc_put(&o, '%');
            break;
        default:
            /* Unknown conversion: copy it literally rather than guess. */
            if (!*fmt)
                fmt--;
            pc_put_s(&o, start, (size_t)(fmt - start + 1));
            break;
        }
        fmt++;
    }
    va_end(args);
    if (n)
        buf[o.len < n ? o.len : n - 1] = '\0';
    return o.len > 0x7fffffff ? 0x7fffffff : (int)o.len;
}

int pc_fmt(char *buf, unsigned long n, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = pc_vfmt(buf, n, fmt, ap);
    va_end(ap);
    return r;
}

static int pc_lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* ASCII, locale-free (the program may have called setlocale). */
int pc_strieq(const char *a, const char *b)
{
    while (*a && pc_lower((unsigned char)*a) == pc_lower((unsigned char)*b)) {
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}
