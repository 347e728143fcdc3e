/* tasks.c - the tasks a limit leaves this process (tasks.h). */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "util/tasks.h"
#include "util/fdsafe.h"

/* pincache's threads never take the last PC_TASKS_KEEP tasks nor more than
 * half of those left.  A process within a few dozen tasks of its limit is
 * the one whose next burst (a worker per CPU, a DataLoader's processes, a
 * subprocess) meets it, and each of our threads there could be the one it
 * misses; far from it, half still leaves the program the larger part of
 * what is free, and pincache's default count (16 copy threads and the
 * reaper at most) fits in any headroom of 81 or more, so only processes
 * that close to a limit ever stage with fewer threads. */
#define PC_TASKS_KEEP 64

/* Off the caller's stack: a program thread may have 16 KiB. */
struct pc_tasks_buf {
    char text[4096];            /* /proc/self/cgroup, then the others */
    char path[4096 + 512];      /* a cgroup's directory, then a file in it */
    char num[64];
};

/* The number a small file holds; -1 when absent or not a number ("max"). */
static long pc_tasks_number(const char *path, char *buf, size_t n)
{
    char *end;
    long v;

    pc_read_small(path, buf, n);
    if (buf[0] < '0' || buf[0] > '9')
        return -1;
    errno = 0;
    v = strtol(buf, &end, 10);
    if (errno || (*end && *end != '\n'))
        return -1;
    return v;
}

/* The least headroom of the pids cgroup whose directory b->path holds
 * (len bytes, the first base of them the hierarchy's mount) and of its
 * ancestors: a limit anywhere above counts the tasks below it. */
static long pc_tasks_walk(struct pc_tasks_buf *b, size_t base, size_t len)
{
    long best = PC_TASKS_UNLIMITED, max, cur;

    for (;;) {
        memcpy(b->path + len, "/pids.max", sizeof "/pids.max");
        max = pc_tasks_number(b->path, b->num, sizeof b->num);
        if (max >= 0) {
            memcpy(b->path + len, "/pids.current", sizeof "/pids.current");
            cur = pc_tasks_number(b->path, b->num, sizeof b->num);
            if (cur < 0)
                cur = 0;     /* a limit with no count: the limit at least */
            if (max - cur < best)
                best = max > cur ? max - cur : 0;
        }
        if (len <= base)
            return best;
        while (len > base && b->path[len - 1] != '/')
            len--;
        len = len > base ? len - 1 : base;
    }
}

/* The walk from cgroup path (absolute, as /proc/self/cgroup names it) in
 * the hierarchy mounted at root + mount. */
static long pc_tasks_hierarchy(struct pc_tasks_buf *b, const char *root, const char *mount,
                               const char *path, size_t plen)
{
    size_t base = strlen(root) + strlen(mount), len;
    int n;

    while (plen > 0 && path[plen - 1] == '/')
        plen--;
    n = snprintf(b->path, sizeof b->path - 32, "%s%s%.*s", root, mount, (int)plen, path);
    if (n < 0 || (size_t)n >= sizeof b->path - 32)
        return PC_TASKS_UNLIMITED;
    len = (size_t)n;
    return pc_tasks_walk(b, base, len);
}

/* Is "pids" one of the comma-separated controllers in [s, e)? */
static int pc_tasks_has_pids(const char *s, const char *e)
{
    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        if (!c)
            c = e;
        if (c - s == 4 && !memcmp(s, "pids", 4))
            return 1;
        s = c + 1;
    }
    return 0;
}

static long pc_tasks_min(long a, long b)
{
    return a < b ? a : b;
}

/* Lines "ID:CONTROLLERS:PATH": v2's is "0::PATH", mounted at
 * /sys/fs/cgroup (or /sys/fs/cgroup/unified beside v1's); v1's pids
 * hierarchy at /sys/fs/cgroup/pids.  A path with ".." lies outside the
 * cgroup namespace: no ancestor of it is in view. */
static long pc_tasks_cgroups(struct pc_tasks_buf *b, const char *root)
{
    long best = PC_TASKS_UNLIMITED;
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
            best = pc_tasks_min(best, pc_tasks_hierarchy(b, root, "/sys/fs/cgroup", p, strlen(p)));
            best = pc_tasks_min(best, pc_tasks_hierarchy(b, root, "/sys/fs/cgroup/unified", p, strlen(p)));
        } else if (pc_tasks_has_pids(c1 + 1, c2)) {
            best = pc_tasks_min(best, pc_tasks_hierarchy(b, root, "/sys/fs/cgroup/pids", p, strlen(p)));
        }
    }
    return best;
}

/* Root of the initial user namespace (uid_map "0 0 4294967295", or no map:
 * no user namespaces): the kernel does not hold it to RLIMIT_NPROC.  Root
 * of any other namespace (a rootless container) it does. */
static int pc_tasks_init_root(struct pc_tasks_buf *b, const char *root)
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
 * never the program fewer tasks.  Unreadable: none. */
static long pc_tasks_nproc(struct pc_tasks_buf *b, const char *root)
{
    struct rlimit rl;
    char *slash;
    long total;

    if (getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)PC_TASKS_UNLIMITED || pc_tasks_init_root(b, root))
        return PC_TASKS_UNLIMITED;
    snprintf(b->path, sizeof b->path, "%s/proc/loadavg", root);
    pc_read_small(b->path, b->text, sizeof b->text);
    slash = strchr(b->text, '/');
    total = slash ? strtol(slash + 1, NULL, 10) : -1;
    if (total <= 0)
        return 0;
    return (long)rl.rlim_cur > total ? (long)rl.rlim_cur - total : 0;
}

long pc_tasks_headroom(const char *root)
{
    struct pc_tasks_buf *b;
    int saved = errno;
    long h;

    if (!root)
        root = "";
    if (!(b = malloc(sizeof *b))) {
        errno = saved;
        return 0;            /* the thread's stack would not be had either */
    }
    h = pc_tasks_min(pc_tasks_cgroups(b, root), pc_tasks_nproc(b, root));
    free(b);
    errno = saved;
    return h;
}

long pc_tasks_spare(long headroom)
{
    long keep;

    if (headroom == PC_TASKS_UNLIMITED)
        return PC_TASKS_UNLIMITED;
    keep = headroom / 2 + headroom % 2;
    if (keep < PC_TASKS_KEEP)
        keep = PC_TASKS_KEEP;
    return headroom > keep ? headroom - keep : 0;
}
