/* sidefx - a CUDA program whose side effects other than CUDA's sidefx.sh
 * compares plainly and under pincache.  It writes nothing; its exit status
 * is 0 when everything held, else the number of the check that failed.
 *
 *   sidefx stdfds   run with some of 0, 1, 2 closed: after the CUDA work
 *                   they are still closed, and the program's own next
 *                   open() gets the lowest of them (pincache's descriptors
 *                   never take a standard number)
 *
 * The CUDA work (work()): a 4 MiB pageable copy each way first (staged
 * under pincache: the node's shared file is opened on the way), a small
 * pinned block allocated, freed and allocated again (a cache hit), a
 * 64 MiB one (a fast block: a memfd per chunk), an async copy and a
 * stream synchronization. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cuda_runtime_api.h>

#define N_COPY ((size_t)4 << 20)
#define N_BIG ((size_t)64 << 20)

static char *dev, *host;

/* 0, or the number (from 10 up) of the step that failed. */
static int work(void)
{
    char *p = NULL;

    if (!host && !(host = malloc(N_COPY)))
        return 10;
    if (!dev && cudaMalloc((void **)&dev, N_COPY) != cudaSuccess)
        return 11;
    memset(host, 9, N_COPY);
    if (cudaMemcpy(dev, host, N_COPY, cudaMemcpyHostToDevice) != cudaSuccess)
        return 12;
    memset(host, 0, N_COPY);
    if (cudaMemcpy(host, dev, N_COPY, cudaMemcpyDeviceToHost) != cudaSuccess || host[0] != 9 ||
        host[N_COPY - 1] != 9)
        return 13;
    if (cudaHostAlloc((void **)&p, 4096, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
        return 14;
    if (cudaHostAlloc((void **)&p, 4096, 0) != cudaSuccess || cudaFreeHost(p) != cudaSuccess)
        return 15;
    if (cudaHostAlloc((void **)&p, N_BIG, 0) != cudaSuccess)
        return 16;
    memset(p, 5, N_BIG);
    if (p[N_BIG - 1] != 5 || cudaFreeHost(p) != cudaSuccess)
        return 17;
    if (cudaMemcpyAsync(dev, host, N_COPY, cudaMemcpyHostToDevice, 0) != cudaSuccess)
        return 18;
    if (cudaStreamSynchronize(0) != cudaSuccess)
        return 19;
    if (cudaGetLastError() != cudaSuccess)
        return 20;
    return 0;
}

static int is_closed(int fd)
{
    return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static int stdfds(void)
{
    int closed[3], lowest = -1, fd, r;

    for (fd = 2; fd >= 0; fd--)
        if ((closed[fd] = is_closed(fd)))
            lowest = fd;
    if (lowest < 0)
        return 2;            /* the script closes at least one */
    if ((r = work()) != 0)
        return r;
    for (fd = 0; fd < 3; fd++)
        if (closed[fd] && !is_closed(fd))
            return 3 + fd;   /* 3, 4, 5: pincache's file took 0, 1 or 2 */
    fd = open("/dev/null", O_RDONLY);
    if (fd != lowest)
        return 6;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 1;
    if (!strcmp(argv[1], "stdfds"))
        return stdfds();
    return 1;
}
