/* limits.c - what a container's limits leave the program (limits.h). */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "util/limits.h"
#include "util/fdsafe.h"
#include "util/stats.h"

/* pincache's threads never take the last PC_LIMITS_KEEP_TASKS tasks nor
 * more than half of those left.  A process within a few dozen tasks of its
 * limit is the one whose next burst (a worker per CPU, a DataLoader's
 * processes, a subprocess) meets it, and each of our threads there could
 * be the one it misses; far from it, half still leaves the program the
 * larger part of what is free, and pincache's default count (16 copy
 * threads and the reaper at most) fits in any headroom of 81 or more, so
 * only processes that close to a limit ever stage with fewer threads. */
#define PC_LIMITS_KEEP_TASKS 64
/* The ring (64 MiB by default) is never grown into the last 256 MiB a
 * memory limit leaves, nor into more than half: a process that close to
 * its limit is one allocation from the OOM killer, and a copy the runtime
 * makes instead costs only speed. */
#define PC_LIMITS_KEEP_BYTES ((long)256 << 20)

/* Off the caller's stack: a program thread may have 16 KiB. */
struct pc_limits_buf {
    char text[4096];            /* /proc/self/cgroup, then the others */
    char stat[8192];            /* a memory.stat */
    char path[4096 + 512];      /* a cgroup's directory, then a file in it */
    char num[64];
};

/* One level of a walk: the headroom the cgroup whose directory b->path
 * holds (len bytes) gives, or PC_LIMIT_NONE; v1: of cgroup v1. */
typedef long (*pc_limits_level_fn)(struct pc_limits_buf *b, size_t len, int v1);

static long pc_limits_min(long a, long b)
{
    return a < b ? a : b;
}

/* The number s starts with; -1 when it does not start with one ("max"). */
static long pc_limits_parse(const char *s)
{
    char *end;
    long v;

    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || (*end && *end != '\n' && *end != ' '))
        return -1;
    return v;
}

/* The number in file name of the cgroup at b->path (len bytes), or -1. */
static long pc_limits_file(struct pc_limits_buf *b, size_t len, const char *name)
{
    snprintf(b->path + len, sizeof b->path - len, "/%s", name);
    pc_read_small(b->path, b->num, sizeof b->num);
    return pc_limits_parse(b->num);
}

/* The walk from the cgroup at b->path (len bytes, the first base of them
 * the hierarchy's mount) up to the mount: a limit anywhere above counts
 * everything below it. */
static long pc_limits_walk(struct pc_limits_buf *b, size_t base, size_t len, pc_limits_level_fn level,
                           int v1)
{
    long best = PC_LIMIT_NONE;

    for (;;) {
        best = pc_limits_min(best, level(b, len, v1));
        if (len <= base)
            return best;
        while (len > base && b->path[len - 1] != '/')
            len--;
        len = len > base ? len - 1 : base;
    }
}

static long pc_limits_hierarchy(struct pc_limits_buf *b, const char *root, const char *mount,
                                const char *path, pc_limits_level_fn level, int v1)
{
    size_t plen = strlen(path);
    int n;

    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    n = snprintf(b->path, sizeof b->path - 64, "%s%s%.*s", root, mount, (int)plen, path);
    if (n < 0 || (size_t)n >= sizeof b->path - 64)
        return PC_LIMIT_NONE;
    return pc_limits_walk(b, strlen(root) + strlen(mount), (size_t)n, level, v1);
}

/* Is controller one of the comma-separated controllers in [s, e)? */
static int pc_limits_has(const char *s, const char *e, const char *controller)
{
    size_t n = strlen(controller);

    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        if (!c)
            c = e;
        if ((size_t)(c - s) == n && !memcmp(s, controller, n))
            return 1;
        s = c + 1;
    }
    return 0;
}

/* Over /proc/self/cgroup's lines "ID:CONTROLLERS:PATH": v2's "0::PATH",
 * mounted at /sys/fs/cgroup (or /sys/fs/cgroup/unified beside v1's), and
 * v1's line of controller, mounted at v1mount.  A path with ".." lies
 * outside the cgroup namespace: no ancestor of it is in view. */
static long pc_limits_cgroups(struct pc_limits_buf *b, const char *root, const char *controller,
                              const char *v1mount, pc_limits_level_fn level)
{
    long best = PC_LIMIT_NONE;
    char *line, *nl, *c1, *c2, *p;

    snprintf(b->path, sizeof b->path, "%s/proc/self/cgroup", root);
    pc_read_small(b->path, b->text, sizeof b->text);
    for (line = b->text; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        if (!(c1 = strchr(line, ':')) || !(c2 = strchr(c1 + 1, ':')))
            continue;
        p = c2 + 1;
        if (p[0] != '/' || strstr(p, "/.."))
            continue;
        if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1) {
            best = pc_limits_min(best, pc_limits_hierarchy(b, root, "/sys/fs/cgroup", p, level, 0));
            best = pc_limits_min(best, pc_limits_hierarchy(b, root, "/sys/fs/cgroup/unified", p, level, 0));
        } else if (pc_limits_has(c1 + 1, c2, controller)) {
            best = pc_limits_min(best, pc_limits_hierarchy(b, root, v1mount, p, level, 1));
        }
    }
    return best;
}

/* What leaves the program max(least, half of what is left). */
static long pc_limits_spare(long left, long least)
{
    long keep;

    if (left == PC_LIMIT_NONE)
        return PC_LIMIT_NONE;
    keep = left / 2 + left % 2;
    if (keep < least)
        keep = least;
    return left > keep ? left - keep : 0;
}

static void *pc_limits_begin(const char **root, int *saved)
{
    *saved = errno;
    if (!*root)
        *root = "";
    return malloc(sizeof(struct pc_limits_buf));
}

static long pc_limits_end(struct pc_limits_buf *b, long v, int saved)
{
    free(b);
    errno = saved;
    return v;
}

/* ---- tasks */

static long pc_limits_pids_level(struct pc_limits_buf *b, size_t len, int v1)
{
    long max = pc_limits_file(b, len, "pids.max"), cur;

    (void)v1;
    if (max < 0)
        return PC_LIMIT_NONE;
    cur = pc_limits_file(b, len, "pids.current");
    if (cur < 0)
        cur = 0;             /* a limit with no count: the limit at least */
    return max > cur ? max - cur : 0;
}

/* Root of the initial user namespace (uid_map "0 0 4294967295", or no map:
 * no user namespaces): the kernel does not hold it to RLIMIT_NPROC.  Root
 * of any other namespace (a rootless container) it does. */
static int pc_limits_init_root(struct pc_limits_buf *b, const char *root)
{
    unsigned long in, out, count;

    if (getuid() != 0)
        return 0;
    snprintf(b->path, sizeof b->path, "%s/proc/self/uid_map", root);
    pc_read_small(b->path, b->text, sizeof b->text);
    if (!b->text[0])
        return 1;
    return sscanf(b->text, "%lu %lu %lu", &in, &out, &count) == 3 && in == 0 && out == 0 &&
           count == 4294967295ul;
}

/* RLIMIT_NPROC counts the tasks of the real user.  Nothing tells that count
 * cheaply, so /proc/loadavg's count of every task of the host (the fourth
 * field's second number) stands for it: more than it, so the headroom is
 * less than the kernel's, and a busy shared host gets fewer copy threads,
 * never the program fewer tasks.  Unreadable (no /proc): no limit known,
 * as for a cgroup file. */
static long pc_limits_nproc(struct pc_limits_buf *b, const char *root)
{
    struct rlimit rl;
    char *slash;
    long total;

    if (getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)PC_LIMIT_NONE || pc_limits_init_root(b, root))
        return PC_LIMIT_NONE;
    snprintf(b->path, sizeof b->path, "%s/proc/loadavg", root);
    pc_read_small(b->path, b->text, sizeof b->text);
    slash = strchr(b->text, '/');
    total = slash ? strtol(slash + 1, NULL, 10) : -1;
    if (total <= 0)
        return PC_LIMIT_NONE;
    return (long)rl.rlim_cur > total ? (long)rl.rlim_cur - total : 0;
}

long pc_limits_tasks(const char *root)
{
    int saved;
    struct pc_limits_buf *b = pc_limits_begin(&root, &saved);

    if (!b)
        return pc_limits_end(b, 0, saved);   /* the thread's stack would not be had either */
    return pc_limits_end(b, pc_limits_min(pc_limits_cgroups(b, root, "pids", "/sys/fs/cgroup/pids",
                                                            pc_limits_pids_level),
                                          pc_limits_nproc(b, root)), saved);
}

long pc_limits_tasks_spare(long headroom)
{
    return pc_limits_spare(headroom, PC_LIMITS_KEEP_TASKS);
}

/* ---- memory */

/* The value of key in b->stat (lines "key value"), or 0. */
static long pc_limits_stat_key(const struct pc_limits_buf *b, const char *key)
{
    size_t n = strlen(key);

    for (const char *s = b->stat; *s; ) {
        const char *nl = strchr(s, '\n');
        if (!strncmp(s, key, n) && s[n] == ' ') {
            long v = pc_limits_parse(s + n + 1);
            return v > 0 ? v : 0;
        }
        if (!nl)
            break;
        s = nl + 1;
    }
    return 0;
}

/* v2: memory.max, memory.current, memory.stat's file less shmem (shmem,
 * tmpfs and memfds, fast blocks among them, are counted in file, and only
 * swap takes them).  v1: memory.limit_in_bytes (unlimited: near 2^63),
 * memory.usage_in_bytes, memory.stat's total_cache less total_shmem. */
static long pc_limits_memory_level(struct pc_limits_buf *b, size_t len, int v1)
{
    long max = pc_limits_file(b, len, v1 ? "memory.limit_in_bytes" : "memory.max"), cur, cache;

    if (max < 0 || max >= PC_LIMIT_NONE / 2)
        return PC_LIMIT_NONE;
    cur = pc_limits_file(b, len, v1 ? "memory.usage_in_bytes" : "memory.current");
    if (cur < 0)
        cur = 0;
    snprintf(b->path + len, sizeof b->path - len, "/memory.stat");
    pc_read_small(b->path, b->stat, sizeof b->stat);
    cache = pc_limits_stat_key(b, v1 ? "total_cache" : "file") -
            pc_limits_stat_key(b, v1 ? "total_shmem" : "shmem");
    if (cache > 0)
        cur = cache < cur ? cur - cache : 0;
    return max > cur ? max - cur : 0;
}

/* No limit found stays the answer for a second: without a container or a
 * memory limit (the common case) a question costs a clock read instead of
 * a dozen system calls (about 15 us) on every fast block's release; a
 * limit, once seen, is read every time. */
#define PC_LIMITS_NONE_TTL_NS 1000000000ull
static uint64_t pc_limits_none_until;   /* atomic: pc_now_ns() until which "none" holds */

long pc_limits_memory(const char *root)
{
    int saved;
    struct pc_limits_buf *b;
    uint64_t now = pc_now_ns();
    long v;

    if (now < __atomic_load_n(&pc_limits_none_until, __ATOMIC_RELAXED))
        return PC_LIMIT_NONE;
    b = pc_limits_begin(&root, &saved);
    if (!b)
        return pc_limits_end(b, 0, saved);
    v = pc_limits_end(b, pc_limits_cgroups(b, root, "memory", "/sys/fs/cgroup/memory",
                                           pc_limits_memory_level), saved);
    __atomic_store_n(&pc_limits_none_until, v == PC_LIMIT_NONE ? now + PC_LIMITS_NONE_TTL_NS : 0,
                     __ATOMIC_RELAXED);
    return v;
}

long pc_limits_memory_spare(long avail)
{
    return pc_limits_spare(avail, PC_LIMITS_KEEP_BYTES);
}
