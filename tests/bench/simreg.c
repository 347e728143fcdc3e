/* simreg.c - linked into nvcc's programs for coldalloc-verdicts.sh's run on
 * the simulated runtime, which has no fat binaries: the registration calls
 * nvcc's start-up code makes, doing nothing (the programs launch no kernel
 * there). */
static char handle[64];

void **__cudaRegisterFatBinary(void *fatbin)
{
    return (void **)handle;
}

void __cudaRegisterFatBinaryEnd(void **h) {}

void __cudaUnregisterFatBinary(void **h) {}

void __cudaRegisterFunction(void **h, const char *host_fn, char *dev_fn, const char *name, int limit,
                            void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
}

void __cudaRegisterVar(void **h, char *host_var, char *dev_addr, const char *name, int ext,
                       unsigned long size, int constant, int global)
{
}
