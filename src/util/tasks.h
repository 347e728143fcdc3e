/* tasks.h - how many threads pincache may start without taking tasks the
 * program may need.
 *
 * A container's pids limit (cgroup pids.max: Kubernetes, systemd, docker
 * --pids-limit) and RLIMIT_NPROC count threads as tasks.  Once the
 * program's and pincache's together reach the limit, the program's own
 * pthread_create, fork or posix_spawn fails with EAGAIN, where plainly it
 * would have succeeded.  pincache's threads (the copy threads, the reaper)
 * are only there for speed: staging works on the calling thread alone, and
 * a fast block can be unmapped by the thread that releases it.  So they
 * take only a part of what a limit leaves (pc_tasks_spare). */
#ifndef PC_UTIL_TASKS_H
#define PC_UTIL_TASKS_H
#include <limits.h>

#define PC_TASKS_UNLIMITED LONG_MAX

/* Tasks the process may still start before a limit refuses one: the least
 * of pids.max - pids.current over its pids cgroups (v2, and v1's pids
 * hierarchy) and every ancestor in view, and RLIMIT_NPROC less the tasks
 * that may count against it; PC_TASKS_UNLIMITED when no limit is found (no
 * file, "max", unreadable).  root: the directory standing for / in every
 * path read (/proc/self/cgroup, /sys/fs/cgroup, /proc/loadavg,
 * /proc/self/uid_map; NULL or "": / itself; PINCACHE_TEST_LIMITS_ROOT).
 * System calls and one malloc; errno is left as it was. */
long pc_tasks_headroom(const char *root);

/* Of a headroom, the threads pincache may take (PC_TASKS_UNLIMITED for
 * PC_TASKS_UNLIMITED): what leaves the program max(64, half the headroom);
 * 0 when the headroom is 64 or less. */
long pc_tasks_spare(long headroom);

#endif
