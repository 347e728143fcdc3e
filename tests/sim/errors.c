/* errors - what the runtime answers to bad input, one line per call.
 *
 * Each line: the call, its return code, then cudaPeekAtLastError(),
 * cudaGetLastError() and a second cudaGetLastError() (errors are non-sticky:
 * the second read must be 0), then any value the call reported.  The output
 * holds no addresses, so runs can be diffed: the sim against the shim over the
 * sim (tests/sim/errors.sh), and the sim against a real GPU (the same source
 * builds against the real libcudart: it uses the CUDA runtime API only).
 *
 *   errors [multi]   multi: also the cases that need two devices
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>

#define MB (1u << 20)

static void line(const char *what, cudaError_t r, const char *extra)
{
	cudaError_t peek = cudaPeekAtLastError();
	cudaError_t last = cudaGetLastError();
	cudaError_t last2 = cudaGetLastError();

	printf("%-52s ret=%-3d peek=%-3d last=%-3d last2=%d%s%s\n", what, (int)r, (int)peek, (int)last,
	       (int)last2, extra ? "  " : "", extra ? extra : "");
}

#define E(what, call) line(what, (call), NULL)

static void flags_line(const char *what, void *p)
{
	unsigned f = 12345;
	char buf[64];
	cudaError_t r = cudaHostGetFlags(&f, p);

	snprintf(buf, sizeof buf, "flags=%u", r == cudaSuccess ? f : 0);
	line(what, r, buf);
}

static void devptr_line(const char *what, void *p, unsigned flags)
{
	void *d = NULL;
	char buf[64];
	cudaError_t r = cudaHostGetDevicePointer(&d, p, flags);

	snprintf(buf, sizeof buf, "same_address=%d", d == p);
	line(what, r, buf);
}

static void attr_line(const char *what, const void *p)
{
	struct cudaPointerAttributes a;
	char buf[128];
	cudaError_t r;

	memset(&a, 0x5a, sizeof a);
	r = cudaPointerGetAttributes(&a, p);
	snprintf(buf, sizeof buf, "type=%d device=%d dev_is_p=%d dev_null=%d host_is_p=%d host_null=%d",
		 (int)a.type, a.device, a.devicePointer == p, a.devicePointer == NULL, a.hostPointer == p,
		 a.hostPointer == NULL);
	line(what, r, r == cudaSuccess ? buf : NULL);
}

static void sleep_50ms(void *arg)
{
	(void)arg;
	usleep(50000);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Does an event recorded on the legacy stream wait for a 50 ms host function
 * queued on stream s?  Prints waited=1 when cudaEventSynchronize took > 25 ms. */
static void legacy_waits_line(const char *what, cudaStream_t s, cudaEvent_t ev)
{
	double t0;
	char buf[64];
	cudaError_t r;

	cudaLaunchHostFunc(s, sleep_50ms, NULL);
	t0 = now_ms();
	r = cudaEventRecord(ev, 0);
	if (r == cudaSuccess)
		r = cudaEventSynchronize(ev);
	snprintf(buf, sizeof buf, "waited=%d", now_ms() - t0 > 25);
	line(what, r, buf);
	cudaDeviceSynchronize();
}

int main(int argc, char **argv)
{
	int multi = argc > 1 && !strcmp(argv[1], "multi");
	void *p = NULL, *q = NULL, *m = malloc(64 * 1024);
	char *pc;
	char buf[128];
	cudaError_t r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("# errors: one line per call: ret, then peek/get/get of the last error\n");

	/* ---- cudaFreeHost */
	E("cudaFreeHost(NULL)", cudaFreeHost(NULL));
	E("cudaFreeHost(malloc'd)", cudaFreeHost(m));
	cudaHostAlloc(&p, MB, 0);
	pc = p;
	E("cudaFreeHost(interior of live block)", cudaFreeHost(pc + 4096));
	E("cudaFreeHost(live block)", cudaFreeHost(p));
	E("cudaFreeHost(same block again)", cudaFreeHost(p));

	/* ---- cudaHostAlloc / cudaMallocHost */
	q = (void *)&q;
	E("cudaHostAlloc(flags=0xFF)", cudaHostAlloc(&q, 4096, 0xFF));
	E("cudaHostAlloc(flags=8)", cudaHostAlloc(&q, 4096, 8));
	E("cudaHostAlloc(NULL out)", cudaHostAlloc(NULL, 4096, 0));
	E("cudaMallocHost(NULL out)", cudaMallocHost(NULL, 4096));
	E("cudaHostAlloc(1<<50)", cudaHostAlloc(&q, (size_t)1 << 50, 0));
	E("cudaMallocHost(1<<50)", cudaMallocHost(&q, (size_t)1 << 50));
	q = (void *)&q;
	r = cudaHostAlloc(&q, 0, 0);
	snprintf(buf, sizeof buf, "null=%d", q == NULL);
	line("cudaHostAlloc(size 0)", r, buf);
	q = (void *)&q;
	r = cudaMallocHost(&q, 0);
	snprintf(buf, sizeof buf, "null=%d", q == NULL);
	line("cudaMallocHost(size 0)", r, buf);

	/* ---- flags, device pointers, attributes of live blocks */
	for (unsigned f = 0; f < 8; f++) {
		char what[64];

		p = NULL;
		snprintf(what, sizeof what, "cudaHostAlloc(flags=%u)", f);
		E(what, cudaHostAlloc(&p, MB, f));
		pc = p;
		snprintf(what, sizeof what, "cudaHostGetFlags(flags=%u, base)", f);
		flags_line(what, p);
		snprintf(what, sizeof what, "cudaHostGetFlags(flags=%u, interior)", f);
		flags_line(what, pc + 12345);
		E("cudaFreeHost", cudaFreeHost(p));
	}
	cudaHostAlloc(&p, MB, 0);
	pc = p;
	devptr_line("cudaHostGetDevicePointer(base)", p, 0);
	devptr_line("cudaHostGetDevicePointer(interior)", pc + 4096, 0);
	devptr_line("cudaHostGetDevicePointer(flags=1)", p, 1);
	devptr_line("cudaHostGetDevicePointer(malloc'd)", m, 0);
	E("cudaHostGetDevicePointer(NULL out)", cudaHostGetDevicePointer(NULL, p, 0));
	flags_line("cudaHostGetFlags(malloc'd)", m);
	E("cudaHostGetFlags(NULL out)", cudaHostGetFlags(NULL, p));
	attr_line("cudaPointerGetAttributes(pinned base)", p);
	attr_line("cudaPointerGetAttributes(pinned interior)", pc + 4096);
	attr_line("cudaPointerGetAttributes(malloc'd)", m);
	attr_line("cudaPointerGetAttributes(NULL)", NULL);
	E("cudaPointerGetAttributes(NULL out)", cudaPointerGetAttributes(NULL, p));

	/* ---- cudaHostRegister inside and around a pinned block */
	E("cudaHostRegister(inside pinned block)", cudaHostRegister(pc + 4096, 4096, 0));
	E("cudaHostRegister(NULL)", cudaHostRegister(NULL, 4096, 0));
	E("cudaHostRegister(size 0)", cudaHostRegister(m, 0, 0));
	E("cudaHostRegister(flags=0xFF)", cudaHostRegister(m, 4096, 0xFF));
	E("cudaFreeHost(live block)", cudaFreeHost(p));

	/* ---- registered memory */
	{
		void *reg = NULL;
		char *rc;

		if (posix_memalign(&reg, 4096, 4 * 4096))
			return 1;
		rc = reg;
		E("cudaHostRegister(malloc'd, 16K)", cudaHostRegister(reg, 4 * 4096, 0));
		E("cudaHostRegister(same range again)", cudaHostRegister(reg, 4 * 4096, 0));
		E("cudaHostRegister(overlapping range)", cudaHostRegister(rc + 4096, 4096, 0));
		flags_line("cudaHostGetFlags(registered, flags 0)", reg);
		flags_line("cudaHostGetFlags(registered interior)", rc + 100);
		devptr_line("cudaHostGetDevicePointer(registered)", reg, 0);
		attr_line("cudaPointerGetAttributes(registered)", reg);
		E("cudaFreeHost(registered)", cudaFreeHost(reg));
		E("cudaHostUnregister(interior)", cudaHostUnregister(rc + 4096));
		E("cudaHostUnregister(NULL)", cudaHostUnregister(NULL));
		E("cudaHostUnregister(malloc'd)", cudaHostUnregister(m));
		E("cudaHostUnregister(base)", cudaHostUnregister(reg));
		E("cudaHostUnregister(base again)", cudaHostUnregister(reg));
		E("cudaHostRegister(malloc'd, flags=3)", cudaHostRegister(reg, 4 * 4096, 3));
		flags_line("cudaHostGetFlags(registered, flags 3)", reg);
		E("cudaHostUnregister(base)", cudaHostUnregister(reg));
		free(reg);
	}
	{
		void *um = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		munmap(um, 65536);
		E("cudaHostRegister(unmapped)", cudaHostRegister(um, 65536, 0));
	}

	/* ---- a cached block: freed, then asked about; freed twice; interior */
	{
		void *a = NULL, *b = NULL;
		char *ac;

		E("cudaHostAlloc(2MB)", cudaHostAlloc(&a, 2 * MB, cudaHostAllocMapped));
		ac = a;
		E("cudaFreeHost(2MB block)", cudaFreeHost(a));
		flags_line("cudaHostGetFlags(freed block)", a);
		flags_line("cudaHostGetFlags(freed block interior)", ac + 4096);
		devptr_line("cudaHostGetDevicePointer(freed block)", a, 0);
		devptr_line("cudaHostGetDevicePointer(freed interior)", ac + 4096, 0);
		attr_line("cudaPointerGetAttributes(freed block)", a);
		E("cudaFreeHost(freed block again)", cudaFreeHost(a));
		E("cudaFreeHost(freed block interior)", cudaFreeHost(ac + 4096));
		E("cudaHostRegister(inside freed block)", cudaHostRegister(ac + 4096, 4096, 0));
		E("cudaHostAlloc(2MB)", cudaHostAlloc(&b, 2 * MB, 0));
		flags_line("cudaHostGetFlags(reallocated block, flags 0)", b);
		E("cudaFreeHost(2MB block)", cudaFreeHost(b));
		E("cudaFreeHost(2MB block again)", cudaFreeHost(b));
	}

	/* ---- device memory */
	{
		void *d = NULL;
		char *dc;

		q = (void *)&q;
		r = cudaMalloc(&q, 0);
		snprintf(buf, sizeof buf, "null=%d", q == NULL);
		line("cudaMalloc(size 0)", r, buf);
		E("cudaMalloc(NULL out)", cudaMalloc(NULL, 4096));
		E("cudaMalloc(1MB)", cudaMalloc(&d, MB));
		dc = d;
		attr_line("cudaPointerGetAttributes(device)", d);
		flags_line("cudaHostGetFlags(device)", d);
		devptr_line("cudaHostGetDevicePointer(device)", d, 0);
		E("cudaFreeHost(device)", cudaFreeHost(d));
		E("cudaMemcpy(NULL dst)", cudaMemcpy(NULL, m, 16, cudaMemcpyHostToDevice));
		E("cudaMemcpy(kind=7)", cudaMemcpy(d, m, 16, (enum cudaMemcpyKind)7));
		E("cudaMemcpy(count 0, NULL)", cudaMemcpy(NULL, NULL, 0, cudaMemcpyHostToDevice));
		E("cudaMemcpy(H2D)", cudaMemcpy(d, m, 4096, cudaMemcpyHostToDevice));
		E("cudaMemcpy2D(width > pitch)", cudaMemcpy2D(d, 16, m, 16, 32, 4, cudaMemcpyHostToDevice));
		E("cudaMemset(device)", cudaMemset(d, 0, MB));
		E("cudaFree(interior)", cudaFree(dc + 4096));
		E("cudaFree(malloc'd)", cudaFree(m));
		E("cudaFree(NULL)", cudaFree(NULL));
		E("cudaFree(device)", cudaFree(d));
	}

	/* ---- streams, events, devices */
	{
		cudaStream_t s = NULL;
		cudaEvent_t ev = NULL;
		unsigned f = 99;
		int dev = -1;

		E("cudaSetDevice(99)", cudaSetDevice(99));
		E("cudaSetDevice(-1)", cudaSetDevice(-1));
		E("cudaGetDevice(NULL)", cudaGetDevice(NULL));
		E("cudaGetDeviceCount(NULL)", cudaGetDeviceCount(NULL));
		E("cudaStreamCreateWithFlags(flags=4)", cudaStreamCreateWithFlags(&s, 4));
		E("cudaStreamCreate(NULL)", cudaStreamCreate(NULL));
		E("cudaStreamCreateWithFlags(NonBlocking)", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
		r = cudaStreamGetFlags(s, &f);
		snprintf(buf, sizeof buf, "flags=%u", f);
		line("cudaStreamGetFlags(non-blocking)", r, buf);
		r = cudaStreamGetFlags(0, &f);
		snprintf(buf, sizeof buf, "flags=%u", f);
		line("cudaStreamGetFlags(0)", r, buf);
		r = cudaStreamGetDevice(s, &dev);
		snprintf(buf, sizeof buf, "device=%d", dev);
		line("cudaStreamGetDevice", r, buf);
		E("cudaEventCreateWithFlags(flags=0x100)", cudaEventCreateWithFlags(&ev, 0x100));
		E("cudaEventCreateWithFlags(Interprocess alone)", cudaEventCreateWithFlags(&ev, cudaEventInterprocess));
		E("cudaEventCreateWithFlags(DisableTiming)", cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
		E("cudaEventQuery(never recorded)", cudaEventQuery(ev));
		E("cudaEventSynchronize(never recorded)", cudaEventSynchronize(ev));
		E("cudaLaunchHostFunc(NULL fn)", cudaLaunchHostFunc(s, NULL, NULL));
		E("cudaLaunchHostFunc(50 ms)", cudaLaunchHostFunc(s, sleep_50ms, NULL));
		E("cudaEventRecord(busy stream)", cudaEventRecord(ev, s));
		E("cudaStreamQuery(busy)", cudaStreamQuery(s));
		E("cudaEventQuery(pending)", cudaEventQuery(ev));
		{
			float ms = 0;

			E("cudaEventElapsedTime(DisableTiming)", cudaEventElapsedTime(&ms, ev, ev));
			E("cudaEventElapsedTime(NULL out)", cudaEventElapsedTime(NULL, ev, ev));
		}
		E("cudaEventSynchronize(pending)", cudaEventSynchronize(ev));
		E("cudaEventQuery(done)", cudaEventQuery(ev));
		E("cudaStreamQuery(idle)", cudaStreamQuery(s));
		E("cudaStreamSynchronize", cudaStreamSynchronize(s));
		E("cudaLaunchHostFunc(50 ms, legacy)", cudaLaunchHostFunc(0, sleep_50ms, NULL));
		E("cudaStreamQuery(legacy, busy)", cudaStreamQuery(0));
		E("cudaStreamSynchronize(legacy)", cudaStreamSynchronize(0));
		E("cudaStreamQuery(legacy, idle)", cudaStreamQuery(cudaStreamLegacy));
		E("cudaStreamQuery(per-thread)", cudaStreamQuery(cudaStreamPerThread));
		{
			cudaStream_t b = NULL;

			cudaStreamCreate(&b);
			legacy_waits_line("legacy event after blocking stream work", b, ev);
			legacy_waits_line("legacy event after non-blocking stream work", s, ev);
			legacy_waits_line("legacy event after per-thread stream work", cudaStreamPerThread, ev);
			cudaLaunchHostFunc(b, sleep_50ms, NULL);
			E("cudaStreamQuery(legacy, blocking stream busy)", cudaStreamQuery(0));
			cudaDeviceSynchronize();
			cudaStreamDestroy(b);
		}
		E("cudaStreamDestroy(0)", cudaStreamDestroy(0));
		E("cudaEventDestroy", cudaEventDestroy(ev));
		E("cudaStreamDestroy", cudaStreamDestroy(s));
		E("cudaDeviceSynchronize", cudaDeviceSynchronize());
	}

	/* ---- stream capture */
	{
		cudaStream_t s = NULL, t = NULL;
		cudaGraph_t g = NULL;
		cudaEvent_t ev = NULL;
		enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;

		cudaStreamCreate(&s);
		cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking);
		cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
		E("cudaStreamBeginCapture(legacy)", cudaStreamBeginCapture(0, cudaStreamCaptureModeRelaxed));
		E("cudaStreamEndCapture(not capturing)", cudaStreamEndCapture(s, &g));
		E("cudaStreamBeginCapture(blocking, relaxed)", cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
		r = cudaStreamIsCapturing(s, &st);
		snprintf(buf, sizeof buf, "status=%d", (int)st);
		line("cudaStreamIsCapturing(capturing)", r, buf);
		E("cudaStreamBeginCapture(again)", cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
		E("cudaEventRecord(capturing stream)", cudaEventRecord(ev, s));
		E("cudaEventRecord(non-blocking stream)", cudaEventRecord(ev, t));
		E("cudaEventSynchronize(recorded on non-blocking)", cudaEventSynchronize(ev));
		r = cudaStreamIsCapturing(0, &st);
		snprintf(buf, sizeof buf, "status=%d", (int)st);
		line("cudaStreamIsCapturing(legacy)", r, buf);
		E("cudaEventRecord(legacy while capturing)", cudaEventRecord(ev, 0));
		r = cudaStreamIsCapturing(s, &st);
		snprintf(buf, sizeof buf, "status=%d", (int)st);
		line("cudaStreamIsCapturing(after legacy use)", r, buf);
		g = (cudaGraph_t)&g;
		r = cudaStreamEndCapture(s, &g);
		snprintf(buf, sizeof buf, "graph_null=%d", g == NULL);
		line("cudaStreamEndCapture(invalidated)", r, buf);
		E("cudaStreamBeginCapture(blocking, relaxed)", cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
		E("cudaStreamQuery(capturing)", cudaStreamQuery(s));
		g = (cudaGraph_t)&g;
		r = cudaStreamEndCapture(s, &g);
		snprintf(buf, sizeof buf, "graph_null=%d", g == NULL);
		line("cudaStreamEndCapture(after query)", r, buf);
		E("cudaStreamQuery(after capture)", cudaStreamQuery(s));
		cudaEventDestroy(ev);
		cudaStreamDestroy(t);
		cudaStreamDestroy(s);
	}

	/* ---- two devices: an event belongs to the device current at creation */
	if (multi) {
		cudaEvent_t ev = NULL;
		cudaStream_t s1 = NULL;

		E("cudaSetDevice(0)", cudaSetDevice(0));
		E("cudaEventCreate(device 0)", cudaEventCreate(&ev));
		E("cudaSetDevice(1)", cudaSetDevice(1));
		E("cudaStreamCreate(device 1)", cudaStreamCreate(&s1));
		E("cudaEventRecord(event 0, stream of device 1)", cudaEventRecord(ev, s1));
		E("cudaEventRecord(event 0, legacy of device 1)", cudaEventRecord(ev, 0));
		E("cudaSetDevice(0)", cudaSetDevice(0));
		E("cudaEventRecord(event 0, legacy of device 0)", cudaEventRecord(ev, 0));
		E("cudaStreamWaitEvent(device 1 stream, event 0)", cudaStreamWaitEvent(s1, ev, 0));
		E("cudaStreamDestroy(device 1 stream)", cudaStreamDestroy(s1));
		E("cudaEventDestroy", cudaEventDestroy(ev));
	}

	/* ---- error strings */
	{
		static const int codes[] = { 0, 1, 2, 3, 101, 400, 600, 712, 713, 900, 901, 906, 99999 };

		for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
			printf("%-6d %s: %s\n", codes[i], cudaGetErrorName((cudaError_t)codes[i]),
			       cudaGetErrorString((cudaError_t)codes[i]));
	}
	free(m);
	return 0;
}
