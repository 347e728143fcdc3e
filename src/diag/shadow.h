/* shadow.h - observe mode's shadow of the cache and the registered ranges
 * (shadow.c). */
#ifndef PC_SHADOW_H
#define PC_SHADOW_H
#include <stdint.h>
#include "diag/call.h"

/* A host-memory call c (allocation, free, registration) closed successfully
 * after ns: what the cache would have done, and the registered bytes. */
void pc_shadow_update(struct pc_call *c, uint64_t ns);
/* In a fork child: the parent's blocks are not the child's. */
void pc_shadow_after_fork_child(void);

#endif
