/* Driver-API frees and queries: a block the runtime allocated may be freed
 * or asked about through the driver; forwarded to the core. */
#include "config.h"
#include "pincache.h"
#include "real.h"

PC_EXPORT CUresult cuMemFreeHost(void *p)
{
    PC_FORWARD_DRV(cuMemFreeHost, pc_drv_free_host(p), p);
}

PC_EXPORT CUresult cuMemHostGetFlags(unsigned int *flags, void *p)
{
    PC_FORWARD_DRV(cuMemHostGetFlags, pc_drv_host_get_flags(flags, p), flags, p);
}

PC_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdev, void *p, unsigned int flags)
{
    PC_FORWARD_DRV(cuMemHostGetDevicePointer_v2, pc_drv_host_get_device_pointer(pdev, p, flags), pdev, p, flags);
}
