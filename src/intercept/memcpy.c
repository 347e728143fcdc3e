/* The cudaMemcpy family, _ptds/_ptsz variants included: forwarded. */
#include "config.h"
#include "intercept/guard.h"
#include "api/copy.h"
#include "real/real.h"
#include "diag/diag.h"

PC_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    PC_FORWARD_TIMED(PC_API_memcpy, n, NULL, cudaMemcpy, pc_memcpy(dst, src, n, kind, 0, PC_COPY_SYNC), dst, src, n, kind);
}

PC_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    PC_FORWARD_TIMED(PC_API_memcpy, n, NULL, cudaMemcpy_ptds, pc_memcpy(dst, src, n, kind, 0, PC_COPY_SYNC_PTDS), dst, src, n, kind);
}

PC_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                      cudaStream_t s)
{
    PC_FORWARD_TIMED(PC_API_memcpy_async, n, NULL, cudaMemcpyAsync, pc_memcpy(dst, src, n, kind, s, PC_COPY_ASYNC), dst, src, n, kind, s);
}

PC_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                           cudaStream_t s)
{
    PC_FORWARD_TIMED(PC_API_memcpy_async, n, NULL, cudaMemcpyAsync_ptsz, pc_memcpy(dst, src, n, kind, s, PC_COPY_ASYNC_PTSZ), dst, src, n, kind, s);
}

/* Other shapes: counted, then the real call. */
#define PC_COUNTED(name, bytes, ...) \
    PC_FORWARD_TIMED(PC_API_memcpy_other, bytes, NULL, name, \
                     (pc_copy_seen(bytes), PC_CALL_REAL(name, __VA_ARGS__)), __VA_ARGS__)

PC_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                                   enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpy2D, w * h, dst, dp, src, sp, w, h, kind);
}

PC_EXPORT cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                                        enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpy2D_ptds, w * h, dst, dp, src, sp, w, h, kind);
}

PC_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dp, const void *src, size_t sp, size_t w, size_t h,
                                        enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpy2DAsync, w * h, dst, dp, src, sp, w, h, kind, s);
}

PC_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dp, const void *src, size_t sp, size_t w,
                                             size_t h, enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpy2DAsync_ptsz, w * h, dst, dp, src, sp, w, h, kind, s);
}

#define PC_3D_BYTES(p) ((p) ? (p)->extent.width * (p)->extent.height * (p)->extent.depth : 0)

PC_EXPORT cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
    PC_COUNTED(cudaMemcpy3D, PC_3D_BYTES(p), p);
}

PC_EXPORT cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms *p)
{
    PC_COUNTED(cudaMemcpy3D_ptds, PC_3D_BYTES(p), p);
}

PC_EXPORT cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms *p, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpy3DAsync, PC_3D_BYTES(p), p, s);
}

PC_EXPORT cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms *p, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpy3DAsync_ptsz, PC_3D_BYTES(p), p, s);
}

PC_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n)
{
    PC_COUNTED(cudaMemcpyPeer, n, dst, dd, src, sd, n);
}

PC_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpyPeerAsync, n, dst, dd, src, sd, n, s);
}

PC_EXPORT cudaError_t cudaMemcpyToSymbol(const void *sym, const void *src, size_t n, size_t off,
                                         enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpyToSymbol, n, sym, src, n, off, kind);
}

PC_EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void *sym, const void *src, size_t n, size_t off,
                                              enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpyToSymbol_ptds, n, sym, src, n, off, kind);
}

PC_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *sym, size_t n, size_t off,
                                           enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpyFromSymbol, n, dst, sym, n, off, kind);
}

PC_EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *sym, size_t n, size_t off,
                                                enum cudaMemcpyKind kind)
{
    PC_COUNTED(cudaMemcpyFromSymbol_ptds, n, dst, sym, n, off, kind);
}

PC_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *sym, const void *src, size_t n, size_t off,
                                              enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpyToSymbolAsync, n, sym, src, n, off, kind, s);
}

PC_EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *sym, const void *src, size_t n, size_t off,
                                                   enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpyToSymbolAsync_ptsz, n, sym, src, n, off, kind, s);
}

PC_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *sym, size_t n, size_t off,
                                                enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpyFromSymbolAsync, n, dst, sym, n, off, kind, s);
}

PC_EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *sym, size_t n, size_t off,
                                                     enum cudaMemcpyKind kind, cudaStream_t s)
{
    PC_COUNTED(cudaMemcpyFromSymbolAsync_ptsz, n, dst, sym, n, off, kind, s);
}
