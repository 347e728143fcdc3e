/* integrity - reuse safety of freed pinned blocks, end to end.
 *
 * Each iteration allocates a pinned block (sizes and flags vary), fills it
 * with a pattern unique to (thread, iteration), queues an async H2D copy
 * behind a delay, a "kernel" that checks the device buffer, and a zero-copy
 * kernel that later reads the pinned block through its device pointer, then
 * frees the block at once, while all of that is still queued.  A freed block
 * handed out again before that work has run gets the next pattern written
 * over it, and some kernel sees the wrong bytes.
 *
 *   integrity [-t THREADS] [-n ITERATIONS] [-p] [-u] [-b] [-z US] [-c 0|1]
 *     -p  odd-numbered threads use their per-thread default stream
 *         (cudaMemcpyAsync_ptsz with stream 0, cudaStreamPerThread)
 *     -b  every copy and kernel on the two non-blocking streams
 *     -z  the zero-copy kernel's duration (200 us)
 *     -c  1: the fences must have been context-wide (the simulated device
 *         counted cuCtxRecordEvent calls); 0: they must not
 *     -u  self-check: instead of cudaFreeHost, the program keeps freed blocks
 *         in a naive cache of its own and reuses them at once; the test then
 *         passes only if it sees the corruption this causes.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define NSTREAMS 4
#define Q_LEGACY NSTREAMS         /* device buffer of the legacy default stream */
#define Q_PTS (NSTREAMS + 1)      /* ... of the per-thread default stream */
#define MAX_SIZE (1u << 20)

static const size_t sizes[] = { 4096, 65536, 262144, 1u << 20, 12288, 200000 };
static const unsigned alloc_flags[] = { 0, cudaHostAllocMapped, cudaHostAllocPortable, 0, cudaHostAllocWriteCombined };

struct check {
	const char *what;         /* for the diagnostics */
	int stream;
	const uint64_t *buf;      /* what the kernel reads */
	size_t size;
	uint64_t seed;
	int ran;                  /* written by the kernel (a sim thread), read after sync */
	size_t bad;               /* words that differ from the pattern */
};

struct iter {
	struct check dev, zc;
};

struct worker {
	int id, iters;
	unsigned zc_us;                /* the zero-copy kernel's duration */
	bool ptsz, unsafe, nb_only;    /* -b: the non-blocking streams only */
	struct iter *it;
	int api_errors;
};

static uint64_t pattern(uint64_t seed, size_t i)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + i;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

static void fill(void *p, size_t size, uint64_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < size / 8; i++)
		w[i] = pattern(seed, i);
}

/* A simulated kernel: compare the buffer with the pattern. */
static void check_kernel(void *arg)
{
	struct check *c = arg;

	for (size_t i = 0; i < c->size / 8; i++)
		c->bad += c->buf[i] != pattern(c->seed, i);
	c->ran = 1;
}

static void nop_kernel(void *arg)
{
	(void)arg;
}

#define CK(call) do { if ((call) != cudaSuccess) w->api_errors++; } while (0)

static void *run(void *arg)
{
	struct worker *w = arg;
	cudaStream_t s[NSTREAMS];
	void *dbuf[NSTREAMS + 2];       /* one per queue: a buffer is only reused in its queue's order */
	void *naive[sizeof sizes / sizeof sizes[0]] = { 0 };   /* -u: one idle block per size */

	/* Two blocking and two non-blocking streams. */
	for (int k = 0; k < NSTREAMS; k++) {
		if (k < 2)
			CK(cudaStreamCreate(&s[k]));
		else
			CK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
	}
	for (int k = 0; k < NSTREAMS + 2; k++)
		CK(cudaMalloc(&dbuf[k], MAX_SIZE));
	for (int i = 0; i < w->iters; i++) {
		size_t size = sizes[(i + w->id) % (sizeof sizes / sizeof sizes[0])];
		unsigned flags = alloc_flags[i % (sizeof alloc_flags / sizeof alloc_flags[0])];
		uint64_t seed = ((uint64_t)w->id << 32) | (uint64_t)i;
		int a = w->nb_only ? 2 : i % NSTREAMS, b = w->nb_only ? 3 : (i + 1) % NSTREAMS;
		cudaStream_t sa = s[a], sb = s[b];
		struct iter *it = &w->it[i];
		void *h = NULL, *dp = NULL;
		size_t slot = (size_t)(i + w->id) % (sizeof sizes / sizeof sizes[0]);

		if (w->unsafe && naive[slot]) {
			h = naive[slot];
			naive[slot] = NULL;
		} else if (i % 7 == 3)
			CK(cudaMallocHost(&h, size));
		else
			CK(cudaHostAlloc(&h, size, flags));
		if (!h)
			continue;
		fill(h, size, seed);
		it->dev = (struct check){ .what = "device buffer", .stream = a, .size = size, .seed = seed };
		it->zc = (struct check){ .what = "zero-copy", .stream = b, .buf = NULL, .size = size, .seed = seed };
		CK(cudaHostGetDevicePointer(&dp, h, 0));
		it->zc.buf = dp;

		if (w->ptsz && i % 2 && !w->nb_only) {
			/* The per-thread default stream: 0 means it in the _ptsz calls. */
			it->dev.stream = -2;
			it->dev.buf = dbuf[Q_PTS];
			CK(simLaunch(cudaStreamPerThread, nop_kernel, NULL, 100));
			CK(cudaMemcpyAsync_ptsz(dbuf[Q_PTS], h, size, cudaMemcpyHostToDevice, 0));
			CK(simLaunch(cudaStreamPerThread, check_kernel, &it->dev, 20));
		} else {
			/* Every fifth iteration goes through the legacy default stream. */
			int legacy = i % 5 == 4 && !w->nb_only;
			cudaStream_t q = legacy ? 0 : sa;
			void *d = dbuf[legacy ? Q_LEGACY : a];

			it->dev.stream = legacy ? -1 : a;
			it->dev.buf = d;
			CK(simLaunch(q, nop_kernel, NULL, 100));
			CK(cudaMemcpyAsync(d, h, size, cudaMemcpyHostToDevice, q));
			CK(simLaunch(q, check_kernel, &it->dev, 20));
		}
		/* The zero-copy kernel runs last, on another stream. */
		CK(simLaunch(sb, check_kernel, &it->zc, w->zc_us));
		if (w->unsafe && !naive[slot])
			naive[slot] = h;
		else
			CK(cudaFreeHost(h));
	}
	CK(cudaDeviceSynchronize());
	for (int k = 0; k < NSTREAMS; k++) {
		CK(cudaStreamSynchronize(s[k]));
		CK(cudaStreamDestroy(s[k]));
	}
	for (int k = 0; k < NSTREAMS + 2; k++)
		CK(cudaFree(dbuf[k]));
	CK(cudaStreamSynchronize(cudaStreamPerThread));
	for (size_t k = 0; k < sizeof naive / sizeof naive[0]; k++)
		CK(cudaFreeHost(naive[k]));
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1, iters = 150, opt;
	bool ptsz = false, unsafe = false;
	struct worker *w;
	pthread_t *tid;
	size_t ran = 0, expected = 0, bad_kernels = 0, bad_words = 0;
	int api_errors = 0;

	unsigned zc_us = 200;
	bool nb_only = false;
	int want_ctx = -1;           /* -c 0|1: expect no / some context-wide records */
	struct sim_counters c0, c1;

	while ((opt = getopt(argc, argv, "t:n:puc:z:b")) != -1) {
		if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 'p')
			ptsz = true;
		else if (opt == 'u')
			unsafe = true;
		else if (opt == 'b')
			nb_only = true;
		else if (opt == 'z')
			zc_us = (unsigned)atoi(optarg);
		else if (opt == 'c')
			want_ctx = atoi(optarg) != 0;
		else {
			fprintf(stderr, "usage: %s [-t THREADS] [-n ITERATIONS] [-p] [-u] [-c 0|1] [-z ZEROCOPY_US] [-b]\n", argv[0]);
			return 2;
		}
	}
	simCounters(&c0);
	w = calloc((size_t)threads, sizeof *w);
	tid = calloc((size_t)threads, sizeof *tid);
	for (int t = 0; t < threads; t++) {
		w[t] = (struct worker){ .id = t, .iters = iters, .ptsz = ptsz && (t % 2), .unsafe = unsafe, .zc_us = zc_us, .nb_only = nb_only };
		w[t].it = calloc((size_t)iters, sizeof *w[t].it);
		pthread_create(&tid[t], NULL, run, &w[t]);
	}
	for (int t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	cudaDeviceSynchronize();
	simCounters(&c1);

	for (int t = 0; t < threads; t++) {
		api_errors += w[t].api_errors;
		for (int i = 0; i < iters; i++) {
			struct check *c[2] = { &w[t].it[i].dev, &w[t].it[i].zc };

			for (int k = 0; k < 2; k++) {
				expected++;
				ran += c[k]->ran;
				bad_kernels += c[k]->ran && c[k]->bad;
				bad_words += c[k]->bad;
				if (c[k]->bad && bad_kernels <= 10)
					diag("thread %d iteration %d: %s kernel on stream %d (-1 legacy, -2 per-thread)"
					     " saw %zu of %zu words wrong (block %zu bytes)", t, i, c[k]->what,
					     c[k]->stream, c[k]->bad, c[k]->size / 8, c[k]->size);
			}
		}
		free(w[t].it);
	}
	free(w);
	free(tid);
	is_int(api_errors, 0, "every CUDA call succeeded");
	is_int(ran, expected, "all %zu kernels ran", expected);
	if (unsafe)
		ok(bad_kernels > 0, "self-check: immediate reuse of freed blocks is seen (mismatches=%zu, bad words=%zu)",
		   bad_kernels, bad_words);
	else
		ok(bad_kernels == 0, "every kernel saw its iteration's pattern (mismatches=%zu, bad words=%zu)",
		   bad_kernels, bad_words);
	if (want_ctx == 1)
		ok(c1.ctx_records > c0.ctx_records, "the fences were context-wide: %llu cuCtxRecordEvent calls",
		   c1.ctx_records - c0.ctx_records);
	else if (want_ctx == 0)
		is_int(c1.ctx_records - c0.ctx_records, 0, "no context-wide fence was recorded");
	return done_testing();
}
