/* register.h - registration of the program's own memory (cudaHostRegister,
 * cuMemHostRegister): counted, passed through, and with
 * PINCACHE_REGISTER_DONTFORK kept out of fork() children's copies. */
#ifndef PC_API_REGISTER_H
#define PC_API_REGISTER_H
#include "real/cudart_ext.h"

cudaError_t pc_host_register(void *p, size_t size, unsigned int flags);
cudaError_t pc_host_unregister(void *p);
CUresult pc_drv_host_register(void *p, size_t size, unsigned int flags);
CUresult pc_drv_host_unregister(void *p);

/* pthread_atfork prepare: count what the fork copies. */
void pc_register_before_fork(void);
/* In the fork child: the DONTFORK ranges are not mapped there. */
void pc_register_after_fork_child(void);

#endif
