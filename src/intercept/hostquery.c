/* Questions about host pointers, and registration: forwarded to the core,
 * which answers for blocks the program has freed into the cache. */
#include "config.h"
#include "intercept/guard.h"
#include "api/hostmem.h"
#include "api/register.h"
#include "real/real.h"
#include "diag/diag.h"

PC_EXPORT cudaError_t cudaHostGetFlags(unsigned int *flags, void *p)
{
    PC_FORWARD(cudaHostGetFlags, pc_host_get_flags(flags, p), flags, p);
}

PC_EXPORT cudaError_t cudaHostGetDevicePointer(void **pdev, void *p, unsigned int flags)
{
    PC_FORWARD(cudaHostGetDevicePointer, pc_host_get_device_pointer(pdev, p, flags), pdev, p, flags);
}

PC_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    PC_FORWARD(cudaPointerGetAttributes, pc_pointer_get_attributes(a, p), a, p);
}

PC_EXPORT cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags)
{
    PC_FORWARD_TIMED(PC_API_host_register, size, p, cudaHostRegister, pc_host_register(p, size, flags), p, size, flags);
}

PC_EXPORT cudaError_t cudaHostUnregister(void *p)
{
    PC_FORWARD_TIMED(PC_API_host_unregister, 0, p, cudaHostUnregister, pc_host_unregister(p), p);
}
