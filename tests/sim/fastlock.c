/* fastlock - a cache miss must not wait for another thread's staged copy.
 *
 * Thread A copies 160 MiB of pageable memory to the device with
 * cudaMemcpyAsync on a stream behind a host function that waits for thread
 * B (more than the staging ring holds, so the staged copy waits for its own
 * DMAs, which wait for the host function, with the staging lock held); B,
 * meanwhile, allocates a pinned block the cache does not have (a fast block
 * under PINCACHE_FAST_ALLOC, made on the staging copy threads) and only
 * then lets the host function finish.  Plainly B's cudaHostAlloc never waits
 * for A's copy, so the program ends; a fast block that waited for the
 * staging lock A holds would hang it (found in review, issue 18).
 *
 *   fastlock   (TAP; an alarm turns a hang into a failure) */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define MB (1u << 20)
#define COPY (160 * MB)

static volatile int released;           /* set by B once its allocation returned */

static void CUDART_CB wait_for_b(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&released, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void *thread_b(void *arg)
{
	void **p = arg;

	usleep(200000);                 /* A is inside its copy by now */
	*(cudaError_t *)&p[1] = cudaHostAlloc(&p[0], 64 * MB, 0);
	__atomic_store_n(&released, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "not ok - fastlock hung: a cudaHostAlloc waited for another thread's copy\n";
	(void)!write(1, msg, sizeof msg - 1);
	_exit(1);
}

int main(void)
{
	void *dev = NULL, *res[2] = { NULL, (void *)(intptr_t)-1 };
	char *src = malloc(COPY);
	cudaStream_t s;
	pthread_t b;
	cudaError_t e;

	signal(SIGALRM, on_alarm);
	alarm(60);
	memset(src, 7, COPY);
	cudaMalloc(&dev, COPY);
	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	cudaLaunchHostFunc(s, wait_for_b, NULL);
	pthread_create(&b, NULL, thread_b, res);
	e = cudaMemcpyAsync(dev, src, COPY, cudaMemcpyHostToDevice, s);
	pthread_join(b, NULL);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	alarm(0);
	is_int(e, cudaSuccess, "A's cudaMemcpyAsync behind the host function, and its stream, returned success");
	is_int((cudaError_t)(intptr_t)res[1], cudaSuccess, "B's cudaHostAlloc returned success while A copied");
	ok(res[0] != NULL, "B got a block");
	cudaFreeHost(res[0]);
	cudaFree(dev);
	cudaStreamDestroy(s);
	free(src);
	return done_testing();
}
