/* fastobs - every question a program or a library can ask of a pinned block,
 * for issue 18's fast miss path: a block pincache maps and registers itself
 * must answer each of them exactly as a cudaHostAlloc block does.
 *
 * For each allocation call (cudaHostAlloc with each flag set, cudaMallocHost,
 * cuMemHostAlloc with the same sets, cuMemAllocHost) and sizes that are exact
 * cache size classes (src/core/pool.c: pages up to 64 KiB, then 8 classes per
 * power of two), one block at a time: its flags, device pointers, runtime and
 * driver pointer attributes, registering and unregistering it or part of it,
 * freeing an interior pointer, a fork() with the block live, a copy through
 * it both ways, its free, and the questions asked of it once freed.  Every
 * answer is one line with the call's code and cudaGetLastError() after it;
 * no address and no timing is printed, so the transcripts of three runs
 * compare byte for byte: plainly, under pincache with PINCACHE_FAST_ALLOC=off
 * and with =on (tests/sim/fastobs.sh; tests/sim/run-gpu.sh on a real GPU).
 *
 * The driver API is reached through the runtime (cudaGetDriverEntryPointByVersion,
 * as PyTorch does), so that on the simulated device the runtime's and the
 * driver's answers come from one device: the simulated libcuda.so.1 keeps a
 * device of its own (tests/doubles/README.md).  An entry point the runtime
 * does not have prints "rc=none" (the simulated runtime has a few only);
 * an allocation call without one is skipped.  Against CUDA:
 *   cc -I/usr/local/cuda/include fastobs.c -L/usr/local/cuda/lib64 -lcudart
 * Exit status 0 once the last line, "done", is printed. */
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

enum call { HOST_ALLOC, MALLOC_HOST, MEM_HOST_ALLOC, MEM_ALLOC_HOST };

/* A way to allocate: the call, and the flags of the calls that take them
 * (the runtime's and the driver's bits are the same). */
struct way {
	enum call call;
	unsigned flags;
	char name[48];
};

static const struct {
	const char *rt, *drv;
	unsigned flags;
} flag_sets[] = {
	{ "0", "0", 0 },
	{ "Portable", "PORTABLE", cudaHostAllocPortable },
	{ "Mapped", "DEVICEMAP", cudaHostAllocMapped },
	{ "Portable|Mapped", "PORTABLE|DEVICEMAP", cudaHostAllocPortable | cudaHostAllocMapped },
	{ "WriteCombined", "WRITECOMBINED", cudaHostAllocWriteCombined },
};
_Static_assert(cudaHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE && cudaHostAllocMapped == CU_MEMHOSTALLOC_DEVICEMAP &&
		       cudaHostAllocWriteCombined == CU_MEMHOSTALLOC_WRITECOMBINED,
	       "the runtime's and the driver's allocation flags are the same bits");

/* Exact size classes, so that RANGE_SIZE is the same whether the block is
 * the program's own or a cached one.  The driver's calls get other classes
 * (a page-granular one below 64 KiB, and two that are no power of two),
 * none within 12.5% of the runtime's, so that each API's misses are its
 * own. */
static const size_t rt_sizes[] = { 64 * KiB, 2 * MiB, 64 * MiB };
static const size_t drv_sizes[] = { 48 * KiB, 3 * MiB, 48 * MiB };

static CUcontext cur_ctx;
static char tag[96];   /* the block's name, first on each of its lines */

/* The driver calls asked, each of the type cuda.h gives its name (so
 * cuMemHostRegister is cuMemHostRegister_v2's, as the entry point at
 * CUDA_VERSION is), found through the runtime at start-up. */
static struct {
	__typeof__(&cuMemHostAlloc) cuMemHostAlloc;
	__typeof__(&cuMemAllocHost) cuMemAllocHost;
	__typeof__(&cuMemFreeHost) cuMemFreeHost;
	__typeof__(&cuMemHostGetFlags) cuMemHostGetFlags;
	__typeof__(&cuMemHostGetDevicePointer) cuMemHostGetDevicePointer;
	__typeof__(&cuMemHostRegister) cuMemHostRegister;
	__typeof__(&cuMemHostUnregister) cuMemHostUnregister;
	__typeof__(&cuPointerGetAttribute) cuPointerGetAttribute;
	__typeof__(&cuPointerGetAttributes) cuPointerGetAttributes;
	__typeof__(&cuCtxGetCurrent) cuCtxGetCurrent;
} drv;

static const struct {
	const char *name;
	void **slot;
} entries[] = {
	{ "cuMemHostAlloc", (void **)&drv.cuMemHostAlloc },
	{ "cuMemAllocHost", (void **)&drv.cuMemAllocHost },
	{ "cuMemFreeHost", (void **)&drv.cuMemFreeHost },
	{ "cuMemHostGetFlags", (void **)&drv.cuMemHostGetFlags },
	{ "cuMemHostGetDevicePointer", (void **)&drv.cuMemHostGetDevicePointer },
	{ "cuMemHostRegister", (void **)&drv.cuMemHostRegister },
	{ "cuMemHostUnregister", (void **)&drv.cuMemHostUnregister },
	{ "cuPointerGetAttribute", (void **)&drv.cuPointerGetAttribute },
	{ "cuPointerGetAttributes", (void **)&drv.cuPointerGetAttributes },
	{ "cuCtxGetCurrent", (void **)&drv.cuCtxGetCurrent },
};

#define NONE (-1)   /* the runtime has no such entry point: "rc=none" */
#define DRV(fn, ...) (drv.fn ? (int)drv.fn(__VA_ARGS__) : NONE)

/* One answer: what was asked, its code, the runtime's last error read right
 * after it, and what it reported. */
static void say(const char *what, int rc, const char *fmt, ...)
{
	int last = (int)cudaGetLastError();
	char extra[512] = "", code[16] = "none";
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(extra, sizeof extra, fmt, ap);
		va_end(ap);
	}
	if (rc != NONE)
		snprintf(code, sizeof code, "%d", rc);
	printf("%s: %-44s rc=%-4s last=%-3d%s%s\n", tag, what, code, last, *extra ? " " : "", extra);
}

/* An address as it relates to the pointer asked about. */
static const char *same(uintptr_t v, uintptr_t asked)
{
	return v == asked ? "same" : v == 0 ? "null" : "other";
}

/* The questions are asked at these offsets.  One past the end is asked only
 * what does not depend on the neighbour above the block: that neighbour
 * differs between the runs (the cache keeps freed blocks mapped and pinned),
 * so only "is it still this block?" is compared there. */
enum at { AT_BASE, AT_INTERIOR, AT_LAST, AT_END, AT_N };
static const char *const at_name[AT_N] = { "base", "interior", "last", "end" };

static uintptr_t at_addr(unsigned char *p, size_t n, enum at a)
{
	size_t off[AT_N] = { 0, n / 2 + 3, n - 1, n };

	return (uintptr_t)(p + off[a]);
}

/* ---- flags and device pointers */

static void flags_questions(unsigned char *p, size_t n)
{
	for (enum at a = AT_BASE; a <= AT_INTERIOR; a++) {
		void *q = (void *)at_addr(p, n, a);
		unsigned f = 0;
		char what[64];
		int rc;

		snprintf(what, sizeof what, "cudaHostGetFlags(%s)", at_name[a]);
		rc = (int)cudaHostGetFlags(&f, q);
		say(what, rc, rc ? NULL : "flags=%u", f);
		f = 0;
		snprintf(what, sizeof what, "cuMemHostGetFlags(%s)", at_name[a]);
		rc = DRV(cuMemHostGetFlags, &f, q);
		say(what, rc, rc ? NULL : "flags=%u", f);
	}
}

static void devptr_questions(unsigned char *p, size_t n)
{
	static const unsigned dp_flags[] = { 0, 1 };   /* 1: a bad flag (must be 0) */

	for (enum at a = AT_BASE; a <= AT_INTERIOR; a++) {
		for (size_t i = 0; i < sizeof dp_flags / sizeof dp_flags[0]; i++) {
			uintptr_t q = at_addr(p, n, a);
			void *d = NULL;
			CUdeviceptr dd = 0;
			char what[80];
			int rc;

			snprintf(what, sizeof what, "cudaHostGetDevicePointer(%s, %u)", at_name[a], dp_flags[i]);
			rc = (int)cudaHostGetDevicePointer(&d, (void *)q, dp_flags[i]);
			say(what, rc, "dev=%s", same((uintptr_t)d, q));
			snprintf(what, sizeof what, "cuMemHostGetDevicePointer(%s, %u)", at_name[a], dp_flags[i]);
			rc = DRV(cuMemHostGetDevicePointer, &dd, (void *)q, dp_flags[i]);
			say(what, rc, "dev=%s", same((uintptr_t)dd, q));
		}
	}
}

/* ---- pointer attributes */

static void rt_attr_question(const char *label, unsigned char *p, size_t n, enum at a)
{
	struct cudaPointerAttributes pa;
	uintptr_t q = at_addr(p, n, a);
	char what[80];
	int rc;

	memset(&pa, 0x5a, sizeof pa);
	snprintf(what, sizeof what, "cudaPointerGetAttributes(%s%s)", label, at_name[a]);
	rc = (int)cudaPointerGetAttributes(&pa, (const void *)q);
	if (rc)
		say(what, rc, NULL);
	else if (a == AT_END)
		say(what, rc, "host=%s", same((uintptr_t)pa.hostPointer, q));
	else
		say(what, rc, "type=%d device=%d dev=%s host=%s", (int)pa.type, pa.device,
		    same((uintptr_t)pa.devicePointer, q), same((uintptr_t)pa.hostPointer, q));
}

/* How each driver attribute is printed. */
enum shape {
	NUM,      /* an integer */
	ORDINAL,  /* a signed int */
	ADDR,     /* an address: an offset from the block's base */
	MAPBASE,  /* the driver's mapping: whether it holds the block, not where
		   * it starts (the driver packs small cudaHostAlloc blocks into
		   * shared 2 MiB mappings, so the start depends on what was
		   * allocated before: H200, docs/runs.md run 58) */
	SAME,     /* an address: same as the pointer asked about, other, null */
	CTX,      /* the current context, another, null */
	ID,       /* zero or not, and whether it is the base's */
	HANDLE,   /* null or not */
	CODE,     /* only the code (tokens) */
};

static const struct attr {
	CUpointer_attribute a;
	const char *name;
	enum shape shape;
} attrs[] = {
	{ CU_POINTER_ATTRIBUTE_CONTEXT, "CONTEXT", CTX },
	{ CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "MEMORY_TYPE", NUM },
	{ CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "DEVICE_POINTER", SAME },
	{ CU_POINTER_ATTRIBUTE_HOST_POINTER, "HOST_POINTER", SAME },
	{ CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "SYNC_MEMOPS", NUM },
	{ CU_POINTER_ATTRIBUTE_BUFFER_ID, "BUFFER_ID", ID },
	{ CU_POINTER_ATTRIBUTE_IS_MANAGED, "IS_MANAGED", NUM },
	{ CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "DEVICE_ORDINAL", ORDINAL },
	{ CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, "IS_LEGACY_CUDA_IPC_CAPABLE", NUM },
	{ CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "RANGE_START_ADDR", ADDR },
	{ CU_POINTER_ATTRIBUTE_RANGE_SIZE, "RANGE_SIZE", NUM },
	{ CU_POINTER_ATTRIBUTE_MAPPED, "MAPPED", NUM },
	{ CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, "ALLOWED_HANDLE_TYPES", NUM },
	{ CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE, "IS_GPU_DIRECT_RDMA_CAPABLE", NUM },
	{ CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "ACCESS_FLAGS", NUM },
	{ CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "MEMPOOL_HANDLE", HANDLE },
	{ CU_POINTER_ATTRIBUTE_MAPPING_SIZE, "MAPPING_SIZE", NUM },
	{ CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, "MAPPING_BASE_ADDR", MAPBASE },
	{ CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, "MEMORY_BLOCK_ID", ID },
	{ CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE, "IS_HW_DECOMPRESS_CAPABLE", NUM },
	/* Last: documented to set SYNC_MEMOPS as a side effect (cuda.h). */
	{ CU_POINTER_ATTRIBUTE_P2P_TOKENS, "P2P_TOKENS", CODE },
};
#define NATTR (sizeof attrs / sizeof attrs[0])

/* What libcudart 12 asks through cuPointerGetAttributes: a second, shorter
 * list, so that an attribute the driver refuses cannot hide these. */
static const CUpointer_attribute short_list[] = {
	CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
};

/* Room for any attribute's value (P2P_TOKENS is the largest), zeroed so
 * that a 4-byte answer reads the same as an 8-byte one. */
union value {
	unsigned long long u;
	unsigned char bytes[64];
};

static unsigned long long base_ids[NATTR];   /* the base's ID attributes, for the other offsets */

static void show_value(char *buf, size_t len, size_t k, const union value *v, unsigned char *p, size_t n,
		       uintptr_t q)
{
	unsigned long long u = v->u;

	switch (attrs[k].shape) {
	case NUM:
		snprintf(buf, len, "%llu", u);
		break;
	case ORDINAL:
		snprintf(buf, len, "%d", (int)(unsigned)u);
		break;
	case ADDR:
		if (u == 0)
			snprintf(buf, len, "null");
		else if (u >= (uintptr_t)p && u <= (uintptr_t)p + n)
			snprintf(buf, len, "base+%llu", u - (uintptr_t)p);
		else
			snprintf(buf, len, "outside");
		break;
	case MAPBASE:
		snprintf(buf, len, "%s", u && u <= (uintptr_t)p && (uintptr_t)p - u < (2u << 20) ? "holds the block"
					 : u ? "elsewhere" : "null");
		break;
	case SAME:
		snprintf(buf, len, "%s", same((uintptr_t)u, q));
		break;
	case CTX:
		snprintf(buf, len, "%s", u == (uintptr_t)cur_ctx ? "current" : u ? "other" : "null");
		break;
	case ID:
		if (q == (uintptr_t)p)
			base_ids[k] = u;
		snprintf(buf, len, "%s", !u ? "zero" : u == base_ids[k] ? "nonzero, the base's" : "nonzero, not the base's");
		break;
	case HANDLE:
		snprintf(buf, len, "%s", u ? "non-null" : "null");
		break;
	case CODE:
		*buf = '\0';
		break;
	}
}

static size_t attr_index(CUpointer_attribute a)
{
	for (size_t k = 0; k < NATTR; k++)
		if (attrs[k].a == a)
			return k;
	return 0;
}

static void drv_attr_questions(unsigned char *p, size_t n, enum at a)
{
	uintptr_t q = at_addr(p, n, a);

	if (a == AT_END) {
		/* Only whether the range ends where the block does (see enum at). */
		union value v = { 0 };
		int rc = DRV(cuPointerGetAttribute, &v, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr)q);

		say("cuPointerGetAttribute(RANGE_START_ADDR, end)", rc == NONE ? NONE : 0, "%s",
		    !rc && v.u == (uintptr_t)p ? "this block" : "not this block");
		return;
	}
	for (size_t k = 0; k < NATTR; k++) {
		union value v = { 0 };
		char what[96], val[64];
		int rc = DRV(cuPointerGetAttribute, &v, attrs[k].a, (CUdeviceptr)q);

		show_value(val, sizeof val, k, &v, p, n, q);
		snprintf(what, sizeof what, "cuPointerGetAttribute(%s, %s)", attrs[k].name, at_name[a]);
		say(what, rc, rc || !*val ? NULL : "%s", val);
	}
}

/* cuPointerGetAttributes with a list: the code, then one line per value. */
static void drv_attrs_question(const char *list_name, const CUpointer_attribute *list, size_t m,
			       unsigned char *p, size_t n, enum at a)
{
	uintptr_t q = at_addr(p, n, a);
	union value v[NATTR];
	void *data[NATTR];
	CUpointer_attribute which[NATTR];
	char what[96], val[64];
	int rc;

	memset(v, 0, sizeof v);
	for (size_t i = 0; i < m; i++) {
		which[i] = list[i];
		data[i] = &v[i];
	}
	snprintf(what, sizeof what, "cuPointerGetAttributes(%s, %s)", list_name, at_name[a]);
	rc = DRV(cuPointerGetAttributes, (unsigned)m, which, data, (CUdeviceptr)q);
	say(what, rc, NULL);
	if (rc)
		return;
	for (size_t i = 0; i < m; i++) {
		size_t k = attr_index(list[i]);

		show_value(val, sizeof val, k, &v[i], p, n, q);
		snprintf(what, sizeof what, "  .. %s", attrs[k].name);
		say(what, 0, "%s", val);
	}
}

static void attr_questions(unsigned char *p, size_t n)
{
	CUpointer_attribute all[NATTR];

	for (size_t k = 0; k < NATTR; k++)
		all[k] = attrs[k].a;
	for (enum at a = AT_BASE; a < AT_N; a++)
		rt_attr_question("", p, n, a);
	for (enum at a = AT_BASE; a < AT_N; a++)
		drv_attr_questions(p, n, a);
	for (enum at a = AT_BASE; a <= AT_LAST; a++) {
		drv_attrs_question("all but P2P_TOKENS", all, NATTR - 1, p, n, a);
		drv_attrs_question("type, managed, ordinal", short_list, sizeof short_list / sizeof short_list[0],
				   p, n, a);
	}
}

/* ---- registering, unregistering, freeing parts of it */

/* Register [q, q+len) both ways; one that succeeds is undone at once, so
 * that the next question finds the block as it was. */
static void register_questions(const char *label, unsigned char *q, size_t len)
{
	char what[96];
	int rc, u;

	snprintf(what, sizeof what, "cudaHostRegister(%s)", label);
	rc = (int)cudaHostRegister(q, len, 0);
	say(what, rc, NULL);
	if (rc == 0) {
		u = (int)cudaHostUnregister(q);
		say("  .. cudaHostUnregister of it", u, NULL);
	}
	snprintf(what, sizeof what, "cuMemHostRegister(%s)", label);
	rc = DRV(cuMemHostRegister, q, len, 0);
	say(what, rc, NULL);
	if (rc == 0) {
		u = DRV(cuMemHostUnregister, q);
		say("  .. cuMemHostUnregister of it", u, NULL);
	}
}

static void unregister_questions(unsigned char *p, size_t n)
{
	/* The interior first: if the base's unregistering succeeds it may
	 * unpin the block, and the questions after it show what remains. */
	static const enum at order[] = { AT_INTERIOR, AT_BASE };
	int any = 0;

	for (size_t i = 0; i < 2; i++) {
		void *q = (void *)at_addr(p, n, order[i]);
		char what[64];
		int rc;

		snprintf(what, sizeof what, "cudaHostUnregister(%s)", at_name[order[i]]);
		rc = (int)cudaHostUnregister(q);
		say(what, rc, NULL);
		any |= rc == 0;
		snprintf(what, sizeof what, "cuMemHostUnregister(%s)", at_name[order[i]]);
		rc = DRV(cuMemHostUnregister, q);
		say(what, rc, NULL);
		any |= rc == 0;
	}
	if (any) {
		flags_questions(p, n);
		rt_attr_question("after unregistering, ", p, n, AT_BASE);
	}
}

static void free_interior_questions(unsigned char *p, size_t n)
{
	void *q = (void *)at_addr(p, n, AT_INTERIOR);
	int rc;

	rc = (int)cudaFreeHost(q);
	say("cudaFreeHost(interior)", rc, NULL);
	rc = DRV(cuMemFreeHost, q);
	say("cuMemFreeHost(interior)", rc, NULL);
}

/* ---- fork: is the block shared with a child? */

/* Every page's first byte, and the last byte, are v. */
static int holds(const volatile unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += 4096)
		if (p[i] != v)
			return 0;
	return p[n - 1] == v;
}

static void put(volatile unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i += 4096)
		p[i] = v;
	p[n - 1] = v;
}

/* The child makes no CUDA call (a child may not: DESIGN.md, Fork), reads the
 * block, says so, waits for the parent's later write and reads again.  Its
 * exit status: bit 0 the bytes were not there, bit 1 the later write was not
 * seen, bit 2 the parent never said it wrote.  A child killed by a signal
 * (a block absent from it faults) is reported as such. */
static void fork_question(unsigned char *p, size_t n)
{
	int c2p[2], p2c[2], st = 0;
	char b = 0;
	pid_t pid;

	put(p, n, 0xa5);
	if (pipe(c2p) || pipe(p2c)) {
		say("fork", 0, "no pipe: not asked");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int code = 0;

		alarm(30);   /* a parent that never writes cannot hold the child */
		close(c2p[0]);
		close(p2c[1]);
		code |= holds(p, n, 0xa5) ? 0 : 1;
		if (write(c2p[1], "r", 1) != 1 || read(p2c[0], &b, 1) != 1)
			_exit(code | 4);
		code |= holds(p, n, 0x5a) ? 0 : 2;
		_exit(code);
	}
	close(c2p[1]);
	close(p2c[0]);
	if (pid < 0) {
		close(c2p[0]);
		close(p2c[1]);
		say("fork", 0, "no fork: not asked");
		return;
	}
	/* The write after the child has read, so that it cannot see it early.
	 * A dead child: read sees end of file, write EPIPE (SIGPIPE ignored). */
	if (read(c2p[0], &b, 1) == 1) {
		put(p, n, 0x5a);
		if (write(p2c[1], "w", 1) != 1)
			b = 0;
	}
	close(p2c[1]);
	close(c2p[0]);
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		say("fork", 0, "child killed by signal %d", WTERMSIG(st));
	else
		say("fork", 0, "child: bytes %s, the parent's later write %s%s", (WEXITSTATUS(st) & 1) ? "absent" : "there",
		    (WEXITSTATUS(st) & 2) ? "not seen" : "seen", (WEXITSTATUS(st) & 4) ? " (never told)" : "");
}

/* ---- a copy through it, both ways */

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i ^ (i >> 9) ^ 0x3c);
}

static void copy_question(unsigned char *p, size_t n)
{
	void *d = NULL;
	size_t i;
	int rc, bad = 0;

	rc = (int)cudaMalloc(&d, n);
	say("cudaMalloc(device buffer)", rc, NULL);
	if (rc)
		return;
	for (i = 0; i < n; i++)
		p[i] = pattern(i);
	rc = (int)cudaMemcpy(d, p, n, cudaMemcpyHostToDevice);
	say("cudaMemcpy(H2D from it)", rc, NULL);
	memset(p, 0, n);
	rc = (int)cudaMemcpy(p, d, n, cudaMemcpyDeviceToHost);
	/* Every 509th byte and the last: reading WriteCombined memory is slow. */
	for (i = 0; i < n && !bad; i += 509)
		bad = p[i] != pattern(i);
	bad |= p[n - 1] != pattern(n - 1);
	say("cudaMemcpy(D2H into it)", rc, "bytes %s", bad ? "WRONG" : "right");
	rc = (int)cudaFree(d);
	say("cudaFree(device buffer)", rc, NULL);
}

/* ---- one block's life */

static int alloc_block(const struct way *w, size_t n, void **p)
{
	switch (w->call) {
	case HOST_ALLOC:
		return (int)cudaHostAlloc(p, n, w->flags);
	case MALLOC_HOST:
		return (int)cudaMallocHost(p, n);
	case MEM_HOST_ALLOC:
		return DRV(cuMemHostAlloc, p, n, w->flags);
	case MEM_ALLOC_HOST:
		return DRV(cuMemAllocHost, p, n);
	}
	return -1;
}

static void one_block(const struct way *w, size_t n, int again)
{
	int via_drv = w->call >= MEM_HOST_ALLOC;
	unsigned char *p;
	void *v = NULL;
	int rc;

	snprintf(tag, sizeof tag, "%s/%zuK%s", w->name, n / KiB, again ? "/again" : "");
	rc = alloc_block(w, n, &v);
	say("allocate", rc, "%s%s", v ? "non-null" : "null",
	    v ? ((uintptr_t)v % 4096 ? ", not page-aligned" : ", page-aligned") : "");
	if (rc || !v)
		return;
	p = v;
	flags_questions(p, n);
	devptr_questions(p, n);
	attr_questions(p, n);
	register_questions("a page inside", p + 4096, 4096);
	register_questions("its first page", p, 4096);
	register_questions("all of it", p, n);
	free_interior_questions(p, n);
	fork_question(p, n);
	copy_question(p, n);
	unregister_questions(p, n);
	rc = via_drv ? DRV(cuMemFreeHost, p) : (int)cudaFreeHost(p);
	say(via_drv ? "cuMemFreeHost(base)" : "cudaFreeHost(base)", rc, NULL);

	/* Freed: it must look like memory nobody pinned. */
	{
		unsigned f = 0;

		rc = (int)cudaHostGetFlags(&f, p);
		say("freed: cudaHostGetFlags(base)", rc, rc ? NULL : "flags=%u", f);
		rt_attr_question("freed, ", p, n, AT_BASE);
		register_questions("freed, a page inside", p + 4096, 4096);
	}
}

/* One way's blocks: each size, the smallest twice (the second can be the
 * first block again, from the cache: a hit must answer as a new block). */
static void blocks(const struct way *w)
{
	const size_t *sizes = w->call >= MEM_HOST_ALLOC ? drv_sizes : rt_sizes;

	one_block(w, sizes[0], 0);
	one_block(w, sizes[0], 1);
	for (size_t s = 1; s < 3; s++)
		one_block(w, sizes[s], 0);
}

/* The device, its context (a runtime call makes the primary one current),
 * and the driver's entry points, each said to be there or not. */
static int setup(void)
{
	if (cudaSetDevice(0) != cudaSuccess || cudaFree(NULL) != cudaSuccess)
		return -1;
	snprintf(tag, sizeof tag, "setup");
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
		enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
		char what[64];
		int rc;

		*entries[i].slot = NULL;
		rc = (int)cudaGetDriverEntryPointByVersion(entries[i].name, entries[i].slot, CUDA_VERSION,
							   cudaEnableDefault, &st);
		if (st != cudaDriverEntryPointSuccess)
			*entries[i].slot = NULL;
		snprintf(what, sizeof what, "entry point %s", entries[i].name);
		say(what, rc, "%s", *entries[i].slot ? "found" : "not found");
	}
	if (DRV(cuCtxGetCurrent, &cur_ctx) > 0)
		return -1;
	cudaGetLastError();
	return 0;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);   /* a child that died must not kill the parent's write */
	if (setup() != 0) {
		printf("setup: no device or no context\n");
		return 1;
	}
	for (enum call c = HOST_ALLOC; c <= MEM_ALLOC_HOST; c++) {
		static const char *const call_name[] = { "cudaHostAlloc", "cudaMallocHost", "cuMemHostAlloc",
							  "cuMemAllocHost" };
		int flagged = c == HOST_ALLOC || c == MEM_HOST_ALLOC;

		for (size_t f = 0; f < (flagged ? sizeof flag_sets / sizeof flag_sets[0] : 1); f++) {
			struct way w = { c, flagged ? flag_sets[f].flags : 0, "" };

			snprintf(w.name, sizeof w.name, "%s%s%s", call_name[c], flagged ? "/" : "",
				 !flagged ? "" : c == HOST_ALLOC ? flag_sets[f].rt : flag_sets[f].drv);
			blocks(&w);
		}
	}
	printf("done\n");
	return 0;
}
