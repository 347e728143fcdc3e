/* rtdrv.c - the runtime calls pincache makes for itself (fences, last
 * error, staging's ring, pointer kinds and stream checks), built on the
 * driver, for a process that has no libcudart at all: a program built with
 * nvcc's default static cudart, or a driver-API program (Numba, JAX).  real.c hands them out only then.
 *
 * The runtime's view is the driver's current context: the device is the
 * current context's, and switching device makes that device's primary
 * context current, except that switching back to the device the thread
 * started on restores the context it had (fence.c switches away and back).
 * A CUdevice is taken to be the device ordinal, as cuDeviceGet returns. */
#include "config.h"
#include <stdint.h>
#include <string.h>
#include "real/real.h"
#include "real/rtdrv.h"

/* The program's own context while a stand-in has switched away from it. */
static __thread CUcontext pc_home_ctx;
static __thread int pc_home_dev;

/* Driver and runtime share their numeric codes for everything fence.c
 * tells apart: success, not ready, and "anything else". */
static cudaError_t pc_rt_err(CUresult r)
{
    return (cudaError_t)r;
}

static cudaError_t pc_rt_get_device(int *dev)
{
    CUdevice d;
    if (!dev)
        return cudaErrorInvalidValue;
    /* Without a context the runtime answers device 0. */
    *dev = PC_CALL_DRV(cuCtxGetDevice, &d) == CUDA_SUCCESS ? (int)d : 0;
    return cudaSuccess;
}

static cudaError_t pc_rt_set_device(int dev)
{
    CUcontext cur = NULL, prim = NULL;
    CUdevice d, curdev;
    CUresult r;

    if (PC_CALL_DRV(cuCtxGetCurrent, &cur) == CUDA_SUCCESS && cur &&
        PC_CALL_DRV(cuCtxGetDevice, &curdev) == CUDA_SUCCESS && (int)curdev == dev)
        return cudaSuccess;
    if (pc_home_ctx && pc_home_dev == dev) {
        r = PC_CALL_DRV(cuCtxSetCurrent, pc_home_ctx);
        if (r == CUDA_SUCCESS)
            pc_home_ctx = NULL;
        return pc_rt_err(r);
    }
    if ((r = PC_CALL_DRV(cuDeviceGet, &d, dev)) != CUDA_SUCCESS)
        return cudaErrorInvalidDevice;
    /* The program holds its own reference on any device it used (that is
     * how the device became known), so ours is dropped at once. */
    if ((r = PC_CALL_DRV(cuDevicePrimaryCtxRetain, &prim, d)) != CUDA_SUCCESS)
        return pc_rt_err(r);
    r = PC_CALL_DRV(cuCtxSetCurrent, prim);
    PC_CALL_DRV(cuDevicePrimaryCtxRelease_v2, d);
    if (r == CUDA_SUCCESS && cur && !pc_home_ctx) {
        pc_home_ctx = cur;
        pc_home_dev = (int)curdev;
    }
    return pc_rt_err(r);
}

static cudaError_t pc_rt_event_create_with_flags(cudaEvent_t *e, unsigned int flags)
{
    return pc_rt_err(PC_CALL_DRV(cuEventCreate, (CUevent *)e, flags));
}

static cudaError_t pc_rt_event_record(cudaEvent_t e, cudaStream_t s)
{
    return pc_rt_err(PC_CALL_DRV(cuEventRecord, (CUevent)e, (CUstream)s));
}

static cudaError_t pc_rt_event_query(cudaEvent_t e)
{
    return pc_rt_err(PC_CALL_DRV(cuEventQuery, (CUevent)e));
}

static cudaError_t pc_rt_event_synchronize(cudaEvent_t e)
{
    return pc_rt_err(PC_CALL_DRV(cuEventSynchronize, (CUevent)e));
}

static cudaError_t pc_rt_event_destroy(cudaEvent_t e)
{
    return pc_rt_err(PC_CALL_DRV(cuEventDestroy_v2, (CUevent)e));
}

/* cudaStreamLegacy and cudaStreamPerThread are CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD. */
static cudaError_t pc_rt_stream_query(cudaStream_t s)
{
    return pc_rt_err(PC_CALL_DRV(cuStreamQuery, (CUstream)s));
}

static cudaError_t pc_rt_stream_synchronize(cudaStream_t s)
{
    return pc_rt_err(PC_CALL_DRV(cuStreamSynchronize, (CUstream)s));
}

static cudaError_t pc_rt_stream_get_flags(cudaStream_t s, unsigned int *flags)
{
    return pc_rt_err(PC_CALL_DRV(cuStreamGetFlags, (CUstream)s, flags));
}

/* A CUdevice is the ordinal (above). */
static cudaError_t pc_rt_stream_get_device(cudaStream_t s, int *dev)
{
    CUdevice d = -1;
    CUresult r = PC_CALL_DRV(cuStreamGetDevice, (CUstream)s, &d);

    if (r == CUDA_SUCCESS && dev)
        *dev = (int)d;
    return pc_rt_err(r);
}

/* The capture statuses are the same numbers in both. */
static cudaError_t pc_rt_stream_is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    return pc_rt_err(PC_CALL_DRV(cuStreamIsCapturing, (CUstream)s, (CUstreamCaptureStatus *)st));
}

/* The flag bits are the same (api/flavour.h asserts it). */
static cudaError_t pc_rt_host_alloc(void **p, size_t n, unsigned int flags)
{
    return pc_rt_err(PC_CALL_DRV(cuMemHostAlloc, p, n, flags));
}

/* What pincache reads of a pointer: its type and device.  The driver's
 * plural query answers memory it does not know with success and empty
 * attributes, which is the runtime's cudaMemoryTypeUnregistered. */
static cudaError_t pc_rt_pointer_get_attributes(struct cudaPointerAttributes *a, const void *p)
{
    CUpointer_attribute which[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
    unsigned int type = 0, managed = 0;
    int dev = -1;
    void *data[] = { &type, &managed, &dev };
    CUresult r;

    if (!a)
        return cudaErrorInvalidValue;
    r = PC_CALL_DRV(cuPointerGetAttributes, 3, which, data, (CUdeviceptr)(uintptr_t)p);
    if (r != CUDA_SUCCESS)
        return pc_rt_err(r);
    memset(a, 0, sizeof *a);
    a->type = managed ? cudaMemoryTypeManaged
            : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
            : type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    a->device = a->type == cudaMemoryTypeUnregistered ? -1 : dev;
    return cudaSuccess;
}

/* The runtime's device attributes are the driver's, number for number. */
static cudaError_t pc_rt_device_get_attribute(int *v, enum cudaDeviceAttr attr, int dev)
{
    CUdevice d;
    if (PC_CALL_DRV(cuDeviceGet, &d, dev) != CUDA_SUCCESS)
        return cudaErrorInvalidDevice;
    return pc_rt_err(PC_CALL_DRV(cuDeviceGetAttribute, v, (CUdevice_attribute)attr, d));
}

/* The PCI address, as the runtime writes it (the driver's, for a CUdevice
 * that is the ordinal). */
static cudaError_t pc_rt_device_get_pci_bus_id(char *id, int len, int dev)
{
    CUdevice d;
    if (PC_CALL_DRV(cuDeviceGet, &d, dev) != CUDA_SUCCESS)
        return cudaErrorInvalidDevice;
    return pc_rt_err(PC_CALL_DRV(cuDeviceGetPCIBusId, id, len, d));
}

/* The driver keeps no last error: nothing is ever pending. */
static cudaError_t pc_rt_no_error(void)
{
    return cudaSuccess;
}

void *pc_rtdrv_standin(const char *name)
{
    static const struct { const char *name; void *fn; } tab[] = {
        { "cudaGetDevice", (void *)pc_rt_get_device },
        { "cudaSetDevice", (void *)pc_rt_set_device },
        { "cudaEventCreateWithFlags", (void *)pc_rt_event_create_with_flags },
        { "cudaEventRecord", (void *)pc_rt_event_record },
        { "cudaEventQuery", (void *)pc_rt_event_query },
        { "cudaEventSynchronize", (void *)pc_rt_event_synchronize },
        { "cudaEventDestroy", (void *)pc_rt_event_destroy },
        { "cudaStreamQuery", (void *)pc_rt_stream_query },
        { "cudaStreamSynchronize", (void *)pc_rt_stream_synchronize },
        { "cudaStreamGetFlags", (void *)pc_rt_stream_get_flags },
        { "cudaStreamGetDevice", (void *)pc_rt_stream_get_device },
        { "cudaStreamIsCapturing", (void *)pc_rt_stream_is_capturing },
        { "cudaHostAlloc", (void *)pc_rt_host_alloc },
        { "cudaPointerGetAttributes", (void *)pc_rt_pointer_get_attributes },
        { "cudaGetLastError", (void *)pc_rt_no_error },
        { "cudaPeekAtLastError", (void *)pc_rt_no_error },
        { "cudaDeviceGetAttribute", (void *)pc_rt_device_get_attribute },
        { "cudaDeviceGetPCIBusId", (void *)pc_rt_device_get_pci_bus_id },
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(tab[i].name, name) == 0)
            return tab[i].fn;
    return NULL;
}
