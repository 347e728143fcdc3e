/* doctor_static - what pincache doctor reads in a program built with nvcc's
 * static cudart (tests/diag/doctor.sh): two of the runtime's own functions
 * defined in it, its error names' table in its read-only data, and the
 * driver loaded by soname and reached through cuGetProcAddress_v2.  Run
 * with a path, it first creates that file, so a test can see whether the
 * doctor started it. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

const char *const doctor_error_names[] = { "cudaErrorCudartUnloading", "cudaErrorInvalidValue" };

int __cudaRegisterFatBinary(void);
int cudaGetDriverEntryPoint(const char *sym, void **fn);

int __cudaRegisterFatBinary(void)
{
	return 0;
}

int cudaGetDriverEntryPoint(const char *sym, void **fn)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*gpa)(const char *, void **, int, unsigned long long, int *) =
		h ? (int (*)(const char *, void **, int, unsigned long long, int *))dlsym(h, "cuGetProcAddress_v2") : NULL;
	int st = 0;

	*fn = NULL;
	return gpa ? gpa(sym, fn, 12000, 0, &st) : 1;
}

int main(int argc, char **argv)
{
	void *init = NULL;
	int fd;

	if (argc > 1 && (fd = open(argv[1], O_WRONLY | O_CREAT, 0644)) >= 0)
		close(fd);
	__cudaRegisterFatBinary();
	if (cudaGetDriverEntryPoint("cuInit", &init) != 0 || !init)
		return 1;
	printf("%s\n", doctor_error_names[argc > 5]);
	pause();
	return 0;
}
