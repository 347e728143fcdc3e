/* limits.h - what a container's limits leave the program, so that what
 * pincache adds of its own (threads, the staging ring) does not take what
 * the program may need.
 *
 * Tasks: a pids limit (cgroup pids.max: Kubernetes, systemd, docker
 * --pids-limit) and RLIMIT_NPROC count threads.  Once the program's and
 * pincache's together reach the limit, the program's own pthread_create,
 * fork or posix_spawn fails with EAGAIN, where plainly it would have
 * succeeded.  pincache's threads (the copy threads, the reaper) are only
 * there for speed: staging works on the calling thread alone, and a fast
 * block can be unmapped by the thread that releases it.
 *
 * Memory: pinned memory is charged to the memory cgroup and can be neither
 * reclaimed nor swapped.  Near memory.max, the next allocation of the
 * program (a page fault) meets the OOM killer instead.  The staging ring
 * is pinned memory the program never asked for; without it the runtime
 * copies pageable memory itself.
 *
 * So pincache takes only a part of what a limit leaves (the _spare
 * functions).  root: the directory standing for / in every path read
 * (/proc/self/cgroup, /sys/fs/cgroup, /proc/loadavg, /proc/self/uid_map;
 * NULL or "": / itself; PINCACHE_TEST_LIMITS_ROOT).  Each reads a few
 * small files with system calls and one malloc, and leaves errno as it
 * was. */
#ifndef PC_UTIL_LIMITS_H
#define PC_UTIL_LIMITS_H
#include <limits.h>

#define PC_LIMIT_NONE LONG_MAX

/* Tasks the process may still start before a limit refuses one: the least
 * of pids.max - pids.current over its pids cgroups (v2, and v1's pids
 * hierarchy) and every ancestor in view, and RLIMIT_NPROC less the tasks
 * that may count against it; PC_LIMIT_NONE when no limit is found (no
 * file, "max", unreadable). */
long pc_limits_tasks(const char *root);

/* Of a task headroom, the threads pincache may take (PC_LIMIT_NONE for
 * PC_LIMIT_NONE): what leaves the program max(64, half the headroom); 0
 * when the headroom is 64 or less. */
long pc_limits_tasks_spare(long headroom);

/* Bytes the process's memory cgroups (v2, and v1's memory hierarchy) and
 * every ancestor in view leave before their limit: the least of the limit
 * less the charge, the page cache other than shared memory counted as free
 * (the kernel reclaims it first); PC_LIMIT_NONE when no limit is found
 * (then for a second without reading again). */
long pc_limits_memory(const char *root);

/* Of the memory a limit leaves, the bytes pincache may pin for itself
 * (PC_LIMIT_NONE for PC_LIMIT_NONE): what leaves the program max(256 MiB,
 * half of it). */
long pc_limits_memory_spare(long avail);

#endif
