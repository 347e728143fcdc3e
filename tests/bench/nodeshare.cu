// nodeshare - one of several processes copying pageable rows to one GPU at
// the same moment (tests/bench/nodeshare.sh: issue 19, "a node's ranks share
// the copy engine").
//
//   nodeshare probe                      exit 3 when there is no CUDA device
//   nodeshare run ROWS ROW_BYTES DIR     one process: see below
//
// ROWS pageable rows of ROW_BYTES each (one malloc each, every page touched:
// tensors a program made), copied to one device buffer as PyTorch's
// pageable .cuda() does it: cudaMemcpyAsync on a stream, then
// cudaStreamSynchronize, row after row.  Before the clock starts, one row is
// copied (the context, and under pincache its ring and copy threads), the
// process writes DIR/ready.PID, and waits for DIR/start (polled every 20
// us, at most 120 s): the script starts every process at once.  Three rows
// are read back and compared afterwards.  One line on stdout:
//   NODESHARE start_ns=T0 end_ns=T1 bytes=N ok=1
// (CLOCK_MONOTONIC, the same clock in every process of the machine).
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static unsigned char pat(size_t row, size_t i)
{
    return (unsigned char)((i * 131u + row * 29u + (i >> 12)) & 0xff);
}

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "nodeshare: %s: %s\n", #call, cudaGetErrorString(e_));    \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

static int run(size_t rows, size_t row, const char *dir)
{
    unsigned char **host = (unsigned char **)calloc(rows, sizeof *host), *back;
    unsigned char *dev;
    cudaStream_t s;
    char path[4096];
    struct stat st;
    uint64_t t0, t1, wait0;
    int ok = 1, fd;

    back = (unsigned char *)malloc(row);
    if (!host || !back)
        return 1;
    for (size_t r = 0; r < rows; r++) {
        if (!(host[r] = (unsigned char *)malloc(row)))
            return 1;
        for (size_t i = 0; i < row; i++)
            host[r][i] = pat(r, i);
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, rows * row));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemcpyAsync(dev, host[0], row, cudaMemcpyHostToDevice, s));   // warm-up
    CHECK(cudaStreamSynchronize(s));

    snprintf(path, sizeof path, "%s/ready.%d", dir, (int)getpid());
    if ((fd = open(path, O_WRONLY | O_CREAT, 0644)) >= 0)
        close(fd);
    snprintf(path, sizeof path, "%s/start", dir);
    wait0 = now_ns();
    while (stat(path, &st) != 0) {
        if (now_ns() - wait0 > 120000000000ull) {
            fprintf(stderr, "nodeshare: no %s after 120 s\n", path);
            return 1;
        }
        usleep(20);
    }

    t0 = now_ns();
    for (size_t r = 0; r < rows; r++) {
        CHECK(cudaMemcpyAsync(dev + r * row, host[r], row, cudaMemcpyHostToDevice, s));
        CHECK(cudaStreamSynchronize(s));
    }
    t1 = now_ns();

    size_t probe[3] = { 0, rows / 2, rows - 1 };
    for (int k = 0; k < 3; k++) {
        CHECK(cudaMemcpy(back, dev + probe[k] * row, row, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < row; i++)
            if (back[i] != pat(probe[k], i)) {
                ok = 0;
                break;
            }
    }
    printf("NODESHARE start_ns=%llu end_ns=%llu bytes=%llu ok=%d\n", (unsigned long long)t0,
           (unsigned long long)t1, (unsigned long long)(rows * row), ok);
    cudaStreamDestroy(s);
    cudaFree(dev);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "probe")) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        printf("NODESHARE probe devices=%d error=%d\n", e == cudaSuccess ? n : 0, (int)e);
        return e == cudaSuccess && n > 0 ? 0 : 3;
    }
    if (argc == 5 && !strcmp(argv[1], "run"))
        return run(strtoull(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), argv[4]);
    fprintf(stderr, "usage: nodeshare probe | run ROWS ROW_BYTES DIR\n");
    return 2;
}
