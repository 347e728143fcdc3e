/* parse.c - the values a user writes in PINCACHE_* variables, read and
 * written back (see parse.h).  No getenv here: options.c reads the
 * environment and calls these. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/fmt.h"
#include "util/parse.h"

int pc_parse_bool(const char *s, int *out)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    size_t i;

    if (!s)
        return -EINVAL;
    for (i = 0; i < 4; i++) {
        if (pc_strieq(s, yes[i])) {
            *out = 1;
            return 0;
        }
        if (pc_strieq(s, no[i])) {
            *out = 0;
            return 0;
        }
    }
    return -EINVAL;
}

/* Digits, then an optional unit: B, K/KB/KiB, M.., G.., T.. (all 1024-based,
 * case-insensitive).  No sign, no fraction, no spaces. */
int pc_parse_size(const char *s, size_t *out)
{
    static const struct {
        const char *unit;
        unsigned shift;
    } units[] = {
        { "", 0 }, { "b", 0 },
        { "k", 10 }, { "kb", 10 }, { "kib", 10 }, { "m", 20 }, { "mb", 20 }, { "mib", 20 },
        { "g", 30 }, { "gb", 30 }, { "gib", 30 }, { "t", 40 }, { "tb", 40 }, { "tib", 40 },
    };
    uint64_t v = 0;
    size_t i;

    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    for (; *s >= '0' && *s <= '9'; s++) {
        uint64_t d = (uint64_t)(*s - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return -EINVAL;
        v = v * 10 + d;
    }
    for (i = 0; i < sizeof units / sizeof units[0] && !pc_strieq(s, units[i].unit); i++)
        ;
    if (i == sizeof units / sizeof units[0] || v > (UINT64_MAX >> units[i].shift))
        return -EINVAL;
    v <<= units[i].shift;
    if (v > SIZE_MAX)
        return -EINVAL;
    *out = (size_t)v;
    return 0;
}

int pc_parse_enum(const char *s, const char *choices, int *out)
{
    int idx = 0;

    if (!s || !choices || !*s)
        return -EINVAL;
    for (;;) {
        const char *bar = strchr(choices, '|');
        size_t n = bar ? (size_t)(bar - choices) : strlen(choices);
        char one[32];
        pc_fmt(one, sizeof one, "%.*s", (int)n, choices);
        if (n < sizeof one && pc_strieq(one, s)) {
            *out = idx;
            return 0;
        }
        if (!bar)
            return -EINVAL;
        choices = bar + 1;
        idx++;
    }
}

int pc_parse_int(const char *s, long *out)
{
    char *end;
    long v;

    if (!s || !*s)
        return -EINVAL;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s)
        return -EINVAL;
    *out = v;
    return 0;
}

int pc_format_size(char *buf, unsigned long n, size_t v)
{
    static const char units[] = "KMGT";
    int u = -1;

    while (u < 3 && v && (v & 1023) == 0) {
        v >>= 10;
        u++;
    }
    if (u < 0)
        return pc_fmt(buf, n, "%zu", v);
    return pc_fmt(buf, n, "%zu%c", v, units[u]);
}

int pc_parse_count_list(const char *s)
{
    int n = 0;

    while (s && *s && *s != '\n') {
        char *e;
        long a = strtol(s, &e, 10), b = a;
        if (e == s || a < 0)
            return 0;
        if (*e == '-') {
            const char *f = e + 1;
            b = strtol(f, &e, 10);
            if (e == f || b < a)
                return 0;
        }
        n += (int)(b - a + 1);
        if (*e != ',' && *e != '\n' && *e != '\0')
            return 0;
        s = *e == ',' ? e + 1 : e;
    }
    return n;
}
