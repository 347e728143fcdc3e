"""cupy_smoke.py - a CuPy smoke run: pinned staging buffers from CuPy's
pinned memory pool, host-to-device copies, a matrix product, a reduction.
Prints "checksum X", identical with and without pincache (run-gpu.sh)."""
import cupy as cp
import cupyx
import numpy as np

rng = np.random.default_rng(7)
total = 0.0
for i in range(40):
    n = 256 + 32 * (i % 8)
    host = cupyx.empty_pinned((n, n), dtype=np.float32)
    host[...] = rng.standard_normal((n, n), dtype=np.float32)
    a = cp.asarray(host)
    b = a @ a.T
    out = cupyx.empty_pinned((n,), dtype=np.float32)
    b.sum(axis=0).get(out=out)
    total += float(np.round(out.astype(np.float64).sum(), 3))
    del host, out
    cp.get_default_pinned_memory_pool().free_all_blocks()
print("checksum %.3f" % total)
