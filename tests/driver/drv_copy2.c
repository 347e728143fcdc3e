/* drv_copy2 - the driver's other copy shapes (device to device, 2D, 3D,
 * peer), reached as nvcc's static cudart reaches them (dlopen libcuda.so.1,
 * cuGetProcAddress_v2), each name twice: at its legacy version with no
 * flags, and at 7000 with the per-thread flag (cudaTypedefs.h:
 * PFN_cuMemcpyDtoD_v3020, PFN_cuMemcpy2D_v7000_ptds, PFN_cuMemcpyPeer_v4000,
 * PFN_cuMemcpy3DPeerAsync_v7000_ptsz, ...); and each exported name through
 * dlsym on the libcuda handle.
 *
 * Per form (N bytes each: W x H, or W x H/2 x 2 for the 3D ones), one chain
 * that carries the bytes through every name and back: HtoD, DtoD, DtoDAsync,
 * 2D to the host (checked), 2DUnaligned from the host, 2DAsync, 3D to the
 * host (checked), 3DAsync from the host, Peer, PeerAsync, 3DPeer,
 * 3DPeerAsync, DtoH (checked).  The async ones go to a created stream
 * (legacy forms) or stream 0, the per-thread stream (_ptsz forms).  Then
 * cuMemcpy2D(NULL) must fail with the driver's 1.  drvcopy2.sh reads the
 * report: every copy counted once with its bytes.
 *
 *   drv_copy2   (TAP; PINCACHE_LIB_EXPECTED=1 under the shim) */
#include "drv_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include "../tap.h"
#include "drv_base.h"

#define W_LEGACY 256     /* legacy forms: 256 x 256 = 65536 bytes a copy */
#define W_PT     200     /* per-thread forms: 200 x 200 = 40000 */
#define NMAX     (W_LEGACY * W_LEGACY)

typedef CUresult (*dtod_t)(CUdeviceptr, CUdeviceptr, size_t);
typedef CUresult (*dtod_async_t)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
typedef CUresult (*c2d_t)(const CUDA_MEMCPY2D *);
typedef CUresult (*c2d_async_t)(const CUDA_MEMCPY2D *, CUstream);
typedef CUresult (*c3d_t)(const CUDA_MEMCPY3D *);
typedef CUresult (*c3d_async_t)(const CUDA_MEMCPY3D *, CUstream);
typedef CUresult (*peer_t)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t);
typedef CUresult (*peer_async_t)(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream);
typedef CUresult (*p3d_t)(const CUDA_MEMCPY3D_PEER *);
typedef CUresult (*p3d_async_t)(const CUDA_MEMCPY3D_PEER *, CUstream);

#define NNAMES 11
struct form {
	const char *label;
	union {
		void *fn[NNAMES];
		struct {
			dtod_t dtod;
			dtod_async_t dtod_async;
			c2d_t c2d, c2d_unaligned;
			c2d_async_t c2d_async;
			c3d_t c3d;
			c3d_async_t c3d_async;
			peer_t peer;
			peer_async_t peer_async;
			p3d_t p3d;
			p3d_async_t p3d_async;
		};
	};
};

/* In the order of struct form; the legacy version of each (cudaTypedefs.h). */
static const struct { const char *name; int ver; const char *legacy, *per_thread; } names[NNAMES] = {
	{ "cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", "cuMemcpyDtoD_v2_ptds" },
	{ "cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync_v2_ptsz" },
	{ "cuMemcpy2D", 3020, "cuMemcpy2D_v2", "cuMemcpy2D_v2_ptds" },
	{ "cuMemcpy2DUnaligned", 3020, "cuMemcpy2DUnaligned_v2", "cuMemcpy2DUnaligned_v2_ptds" },
	{ "cuMemcpy2DAsync", 3020, "cuMemcpy2DAsync_v2", "cuMemcpy2DAsync_v2_ptsz" },
	{ "cuMemcpy3D", 3020, "cuMemcpy3D_v2", "cuMemcpy3D_v2_ptds" },
	{ "cuMemcpy3DAsync", 3020, "cuMemcpy3DAsync_v2", "cuMemcpy3DAsync_v2_ptsz" },
	{ "cuMemcpyPeer", 4000, "cuMemcpyPeer", "cuMemcpyPeer_ptds" },
	{ "cuMemcpyPeerAsync", 4000, "cuMemcpyPeerAsync", "cuMemcpyPeerAsync_ptsz" },
	{ "cuMemcpy3DPeer", 4000, "cuMemcpy3DPeer", "cuMemcpy3DPeer_ptds" },
	{ "cuMemcpy3DPeerAsync", 4000, "cuMemcpy3DPeerAsync", "cuMemcpy3DPeerAsync_ptsz" },
};

/* One side of a 2D or 3D descriptor x: host memory p, or device memory d. */
#define HOST_SIDE(x, side, p, w, h)                                                         \
	((x).side##MemoryType = CU_MEMORYTYPE_HOST, (x).side##Host = (p), (x).side##Pitch = (w))
#define DEV_SIDE(x, side, d, w)                                                              \
	((x).side##MemoryType = CU_MEMORYTYPE_DEVICE, (x).side##Device = (d), (x).side##Pitch = (w))

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
}

int main(void)
{
	CUresult (*htod)(CUdeviceptr, const void *, size_t), (*dtoh)(void *, CUdeviceptr, size_t);
	int shim = getenv("PINCACHE_LIB_EXPECTED") != NULL;
	struct form forms[2] = { { .label = "legacy" }, { .label = "per-thread" } };
	unsigned char *a = malloc(NMAX), *b = malloc(NMAX);
	struct drv_base B;
	CUdeviceptr d0, d1, d2;
	CUcontext ctx;
	CUstream s;

	if (!a || !b || !drv_base_open(&B))
		return done_testing();
	ok(drv_get(&htod, "cuMemcpyHtoD", 3020, 0) & drv_get(&dtoh, "cuMemcpyDtoH", 3020, 0),
	   "cuGetProcAddress: cuMemcpyHtoD, cuMemcpyDtoH");
	for (int k = 0; k < 2; k++) {
		int got = 0;
		for (int i = 0; i < NNAMES; i++)
			got += drv_get(&forms[k].fn[i], names[i].name, k ? 7000 : names[i].ver,
				   k ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0);
		is_int(got, NNAMES, "cuGetProcAddress: the %d copies, %s", NNAMES, forms[k].label);
	}
	for (int i = 0; i < NNAMES; i++) {
		const char *want = shim ? "libpincache.so" : "libcuda.so.1";
		is_str(lib_of(forms[0].fn[i]), want, "%s at %d: %s's", names[i].name, names[i].ver, want);
		is_str(lib_of(forms[1].fn[i]), want, "%s at 7000, per-thread: %s's", names[i].name, want);
		ok(forms[0].fn[i] != forms[1].fn[i], "%s: the per-thread form differs", names[i].name);
		is_str(lib_of(dlsym(B.h, names[i].legacy)), want, "dlsym(libcuda, %s): %s's", names[i].legacy, want);
		is_str(lib_of(dlsym(B.h, names[i].per_thread)), want, "dlsym(libcuda, %s): %s's", names[i].per_thread,
		       want);
	}
	if (B.init(0) || B.retain(&ctx, 0) || B.set(ctx) || B.mem_alloc(&d0, NMAX) || B.mem_alloc(&d1, NMAX) ||
	    B.mem_alloc(&d2, NMAX) || B.stream_create(&s, 0))
		return ok(0, "context, device memory and a stream"), done_testing();
	for (int k = 0; k < 2; k++) {
		struct form *f = &forms[k];
		size_t w = k ? W_PT : W_LEGACY, n = w * w;
		CUstream q = k ? 0 : s;   /* 0: the per-thread stream in a _ptsz call */
		CUstream qs = k ? CU_STREAM_PER_THREAD : s;
		CUDA_MEMCPY2D p2;
		CUDA_MEMCPY3D p3;
		CUDA_MEMCPY3D_PEER pp;

		fill(a, n, 1 + k);
		memset(b, 0, n);
		/* d0 -> d1 -> d2 -> host as 2D */
		memset(&p2, 0, sizeof p2);
		DEV_SIDE(p2, src, d2, w);
		HOST_SIDE(p2, dst, b, w, w);
		p2.WidthInBytes = w;
		p2.Height = w;
		is_int(htod(d0, a, n) | f->dtod(d1, d0, n) | f->dtod_async(d2, d1, n, q) | B.stream_sync(qs) |
		       f->c2d(&p2), CUDA_SUCCESS, "%s: cuMemcpyDtoD, cuMemcpyDtoDAsync, cuMemcpy2D", f->label);
		ok(memcmp(a, b, n) == 0, "%s: the bytes came back", f->label);

		/* host -> d1 (2D unaligned) -> d2 (2D async) -> host as 3D */
		fill(a, n, 11 + k);
		memset(b, 0, n);
		memset(&p2, 0, sizeof p2);
		HOST_SIDE(p2, src, a, w, w);
		DEV_SIDE(p2, dst, d1, w);
		p2.WidthInBytes = w;
		p2.Height = w;
		is_int(f->c2d_unaligned(&p2), CUDA_SUCCESS, "%s: cuMemcpy2DUnaligned", f->label);
		memset(&p2, 0, sizeof p2);
		DEV_SIDE(p2, src, d1, w);
		DEV_SIDE(p2, dst, d2, w);
		p2.WidthInBytes = w;
		p2.Height = w;
		memset(&p3, 0, sizeof p3);
		DEV_SIDE(p3, src, d2, w);
		p3.srcHeight = w / 2;
		HOST_SIDE(p3, dst, b, w, w / 2);
		p3.dstHeight = w / 2;
		p3.WidthInBytes = w;
		p3.Height = w / 2;
		p3.Depth = 2;
		is_int(f->c2d_async(&p2, q) | B.stream_sync(qs) | f->c3d(&p3), CUDA_SUCCESS,
		       "%s: cuMemcpy2DAsync, cuMemcpy3D", f->label);
		ok(memcmp(a, b, n) == 0, "%s: the 2D and 3D bytes came back", f->label);

		/* host -> d0 (3D async) -> d1 (peer) -> d2 (peer async) -> d1 (3D
		 * peer) -> d0 (3D peer async) -> host */
		fill(a, n, 21 + k);
		memset(b, 0, n);
		memset(&p3, 0, sizeof p3);
		HOST_SIDE(p3, src, a, w, w / 2);
		p3.srcHeight = w / 2;
		DEV_SIDE(p3, dst, d0, w);
		p3.dstHeight = w / 2;
		p3.WidthInBytes = w;
		p3.Height = w / 2;
		p3.Depth = 2;
		is_int(f->c3d_async(&p3, q) | B.stream_sync(qs) | f->peer(d1, ctx, d0, ctx, n) |
		       f->peer_async(d2, ctx, d1, ctx, n, q) | B.stream_sync(qs), CUDA_SUCCESS,
		       "%s: cuMemcpy3DAsync, cuMemcpyPeer, cuMemcpyPeerAsync", f->label);
		memset(&pp, 0, sizeof pp);
		DEV_SIDE(pp, src, d2, w);
		pp.srcHeight = w / 2;
		pp.srcContext = ctx;
		DEV_SIDE(pp, dst, d1, w);
		pp.dstHeight = w / 2;
		pp.dstContext = ctx;
		pp.WidthInBytes = w;
		pp.Height = w / 2;
		pp.Depth = 2;
		is_int(f->p3d(&pp), CUDA_SUCCESS, "%s: cuMemcpy3DPeer", f->label);
		pp.srcDevice = d1;
		pp.dstDevice = d0;
		is_int(f->p3d_async(&pp, q) | B.stream_sync(qs) | dtoh(b, d0, n), CUDA_SUCCESS,
		       "%s: cuMemcpy3DPeerAsync", f->label);
		ok(memcmp(a, b, n) == 0, "%s: the peer bytes came back", f->label);
	}
	is_int(forms[0].c2d(NULL), CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D(NULL): the driver's error");
	free(a);
	free(b);
	return done_testing();
}
