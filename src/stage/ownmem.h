/* ownmem.h - pincache's own pinned memory: the staging rings' chunks and
 * the fast blocks' witnesses, none of it ever the program's.
 *
 * Their addresses were free address space before pincache took them, and
 * may have been a block of the program's before that (a block a device
 * reset took, or one the program freed and the cache gave back).  A
 * program's call with such a dangling pointer gets from the real runtime
 * what a pointer to nothing pinned gets; pincache's memory must answer the
 * same, and above all must never be freed by it (fuzzer seed 12496: a free
 * of a block a reset took freed the witness made at its address since). */
#ifndef PC_STAGE_OWNMEM_H
#define PC_STAGE_OWNMEM_H
#include <stddef.h>

/* Record [base, base + size) as pincache's own: 0, or -1 (out of memory:
 * the caller gives the memory back and does without it). */
int pc_own_add(const void *base, size_t size);

/* Forget the range that starts at base (given back, or gone with its
 * context); nothing if there is none. */
void pc_own_remove(const void *base);

/* p lies in pincache's own pinned memory. */
int pc_own_contains(const void *p);

/* In a fork() child: the parent's rings and witnesses are not the child's. */
void pc_own_after_fork_child(void);

#endif
