/* rtdrv.h - the runtime calls pincache makes for itself, built on the driver
 * (rtdrv.c). */
#ifndef PC_RTDRV_H
#define PC_RTDRV_H

/* Stand-ins for the few runtime calls pincache itself makes (fences, last
 * error), built on the driver, for processes with no libcudart at all
 * (nvcc's default static cudart, driver-API programs).  NULL when name has
 * none. */
void *pc_rtdrv_standin(const char *name);

#endif
