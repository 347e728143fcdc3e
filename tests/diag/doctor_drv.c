/* doctor_drv - a program linked against libcuda.so.1 (the simulated one),
 * calling the driver API directly, for pincache doctor (doctor.sh). */
#include <stdio.h>
#include <cuda.h>

int main(void)
{
	void *p = NULL;
	int n = 0;

	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS)
		return 1;
	if (cuMemHostAlloc(&p, 4096, 0) == CUDA_SUCCESS)
		cuMemFreeHost(p);
	printf("%d devices\n", n);
	return 0;
}
