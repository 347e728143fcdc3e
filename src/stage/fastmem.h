/* fastmem.h - the memory side of fast blocks (fastalloc.c): NUMA
 * placement and unmapping on a thread of its own. */
#ifndef PC_STAGE_FASTMEM_H
#define PC_STAGE_FASTMEM_H
#include <stddef.h>

/* The host node closest to device dev, or -1 where placement cannot help. */
int pc_fast_node(int dev);
/* Prefer node for [p, p+n) (nothing when node < 0). */
void pc_fast_bind(char *p, size_t n, int node);
/* size bytes of address space (mmap prot, flags | MAP_ANONYMOUS |
 * MAP_NORESERVE), on a 2 MiB boundary from 2 MiB on; NULL if none. */
char *pc_fast_reserve(size_t size, int prot, int flags);
/* Does the host give shared memory huge pages when advised (the
 * transparent_hugepage shmem_enabled setting not never or deny)? */
int pc_fast_shmem_thp(void);
/* munmap(base, size), soon, on the reaper thread (at once if it cannot run,
 * or where a memory limit leaves less than size to spare). */
void pc_fast_unmap(char *base, size_t size);
/* Wait until everything queued is unmapped. */
void pc_fast_unmap_drain(void);
/* In a fork child: no reaper, nothing queued; no memfd of a block the
 * parent was making. */
void pc_fast_unmap_after_fork_child(void);

/* A chunk's memfd (close-on-exec, 3 or above), -1 if none.  A block's are
 * made after pc_fast_memfds_begin and closed before pc_fast_memfds_end:
 * a fork() child, which inherits those open at the fork, closes them. */
int pc_fast_memfd(void);
void pc_fast_memfds_begin(void);
void pc_fast_memfds_end(void);
/* pthread_atfork's prepare handler: when this thread's fork began. */
void pc_fast_memfds_before_fork(void);

#endif
