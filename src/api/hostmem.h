/* hostmem.h - the host-memory policy (hostmem.c): which allocations and
 * frees the cache serves, which go to the real functions, and the answers
 * about pinned pointers, for the wrappers in src/intercept/ (hostalloc.c,
 * hostquery.c, driver.c).  The _drv forms take the driver's types; the
 * policy is one (flavour.h). */
#ifndef PC_API_HOSTMEM_H
#define PC_API_HOSTMEM_H
#include "real/cudart_ext.h"

cudaError_t pc_host_alloc(void **p, size_t size, unsigned int flags);
cudaError_t pc_free_host(void *p);
cudaError_t pc_host_get_flags(unsigned int *flags, void *p);
cudaError_t pc_host_get_device_pointer(void **pdev, void *p, unsigned int flags);
cudaError_t pc_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p);

/* Driver-API allocation (alloc_host: cuMemAllocHost, else cuMemHostAlloc),
 * and frees and queries, of blocks either API allocated. */
CUresult pc_drv_host_alloc(void **pp, size_t size, unsigned int flags, int alloc_host);
CUresult pc_drv_free_host(void *p);
CUresult pc_drv_host_get_flags(unsigned int *flags, void *p);
/* The driver's pointer attributes: the real answers, but a block the
 * program freed looks foreign, and a fast block's MAPPING_SIZE is what the
 * driver answers for a cudaHostAlloc block of its size. */
CUresult pc_drv_pointer_get_attribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr);
CUresult pc_drv_pointer_get_attributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr);
CUresult pc_drv_host_get_device_pointer(CUdeviceptr *pdev, void *p, unsigned int flags);

/* The pointer to ask the runtime about in p's place: p, or where p points
 * into pincache's own pinned memory or into a block the program freed to
 * the cache (memory a dangling pointer finds unmapped plainly), an address
 * pinned by nobody, whose answers (not pinned, not registered) are the
 * runtime's own. */
void *pc_host_as_seen(void *p);

#endif
