/* hostkind.h - what the copy accounting knows of host memory without asking
 * CUDA (api/copy.c, for the copies staging does not consider): the pinned
 * ranges pincache follows, and the pages the runtime called pageable.
 * CUDA-free (tests/unit/test_hostkind.c).
 *
 * Never used for a staging decision: a pinned copy taken for pageable and
 * staged would change an asynchronous copy's synchronicity (a hang where the
 * program relies on it); staging asks the runtime (memkind.h). */
#ifndef PC_CORE_HOSTKIND_H
#define PC_CORE_HOSTKIND_H
#include <stddef.h>

/* Ranges [p, p+size) pinned through calls pincache followed: successful
 * registrations, observe mode's real pinned blocks (diag/shadow.c adds and
 * removes them as those calls close).  A second add of p replaces its
 * range; removing an unknown p does nothing. */
void pc_hostkind_add(const void *p, size_t size);
void pc_hostkind_remove(const void *p);
/* Does p lie in one of them?  Lock-free while there are none. */
int pc_hostkind_pinned(const void *p);
/* Device dev's context was lost, and its registrations and blocks with it:
 * every range is forgotten (which were dev's is not kept), and the copies
 * ask the runtime again. */
void pc_hostkind_forget_device(int dev);

/* Memory may just have been pinned where it was not (a real pinned
 * allocation, a registration, a host pool's allocation, a host VMM
 * mapping): every thread forgets the pages it remembers as pageable. */
void pc_hostkind_changed(void);
/* This thread's memory of p's page (4 KiB): 1 when the runtime called it
 * pageable since the last pc_hostkind_changed. */
int pc_hostkind_pageable(const void *p);
/* The count of pc_hostkind_changed so far: read before asking the runtime,
 * then handed to pc_hostkind_note_pageable, so that a change made while it
 * answered is not missed. */
unsigned pc_hostkind_epoch(void);
/* The runtime, asked after epoch was read, called p pageable: remembered
 * on this thread (a few pages, one per slot, the latest kept). */
void pc_hostkind_note_pageable(const void *p, unsigned epoch);

/* In a fork child: the parent's ranges are not the child's (leaked). */
void pc_hostkind_after_fork_child(void);

#endif
