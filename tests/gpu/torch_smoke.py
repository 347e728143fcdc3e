"""torch_smoke.py - PyTorch under pincache gives bit-identical results.

Run plainly and under the shim; prints one checksum line and a TAP line.
Exercises pin_memory(), non_blocking copies both ways, PyTorch's host cache
being emptied (which is when PyTorch calls cudaFreeHost), and pageable copies.
"""
import hashlib
import sys
import time

import torch


def main():
    if not torch.cuda.is_available():
        print("1..0 # SKIP no CUDA device")
        return 0
    torch.manual_seed(1234)
    h = hashlib.sha256()
    t0 = time.perf_counter()
    for rnd in range(3):
        for n in (1 << 10, 1 << 16, 655360, 1 << 22, (1 << 22) + 12345):
            a = torch.rand(n)
            p = a.pin_memory()
            d = p.cuda(non_blocking=True)
            d.mul_(3.0).add_(rnd)
            back = torch.empty(n, pin_memory=True)
            back.copy_(d, non_blocking=True)
            torch.cuda.synchronize()
            h.update(back.numpy().tobytes())
            h.update(a.cuda().sum().cpu().numpy().tobytes())   # pageable path
            del p, back, d
        if hasattr(torch._C, "_host_emptyCache"):
            torch._C._host_emptyCache()                        # cudaFreeHost of PyTorch's blocks
    torch.cuda.synchronize()
    print("checksum %s elapsed_ms %.1f" % (h.hexdigest(), 1e3 * (time.perf_counter() - t0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
