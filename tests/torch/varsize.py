"""varsize.py - variable-length sequences through pinned memory.

Batches of L x 1024 float32 (L log-uniform in 32..4096 tokens: 128 KiB to
16 MiB) are pinned with .pin_memory(), copied with .cuda(non_blocking=True)
and summed on the GPU; the last 4 pinned batches stay alive, as in a prefetch
queue.  PyTorch's caching host allocator rounds each block up to a power of
two and keeps every block it ever pinned until its host cache is emptied.

Phase 1 runs --batches batches.  Then PyTorch's host cache is emptied (its
only cudaFreeHost calls), and phase 2 runs the same batches again: plainly
PyTorch pins everything again, under pincache the blocks come from its cache.

Prints ``RESULT test=varsize key=value ...``: the peak of the bytes the
program asked to pin (live), PyTorch's host_memory_stats where this torch has
it (allocated_bytes.peak, num_host_alloc, num_host_free, after each phase),
the time of each phase and of the emptying, and a digest of the GPU sums.
Exit 3: no CUDA device.
"""
import argparse
import hashlib
import math
import os
import random
import sys
import time

import torch

from common import host_empty_cache, host_stats, need_cuda, result

HID, DEPTH = 1024, 4


def lengths(n, seed):
    r = random.Random(seed)
    return [int(math.exp(r.uniform(math.log(32), math.log(4096)))) for _ in range(n)]


def phase(src, lens, acc):
    """Returns (ms, peak of live requested bytes)."""
    live, req, peak = [], 0, 0
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for k, n in enumerate(lens):
        p = src[:n].pin_memory()
        req += p.numel() * 4
        peak = max(peak, req)
        d = p.cuda(non_blocking=True)
        acc[k] += d.sum(dtype=torch.float64)
        live.append(p)
        if len(live) > DEPTH:
            req -= live.pop(0).numel() * 4
    del live
    torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t0), peak


def stat_fields(tag, s):
    keys = ("allocated_bytes.peak", "allocated_bytes.current", "num_host_alloc", "num_host_free")
    return {"%s_%s" % (tag, k.replace(".", "_")): int(s[k]) for k in keys if k in s}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=300)
    args = ap.parse_args()
    need_cuda(torch)
    torch.manual_seed(5)
    src = torch.rand(4096, HID)
    lens = lengths(args.batches, 17)
    acc = torch.zeros(args.batches, dtype=torch.float64, device="cuda")

    ms1, peak1 = phase(src, lens, acc)
    s1 = host_stats(torch)
    t0 = time.perf_counter()
    emptied = host_empty_cache(torch)
    empty_ms = 1e3 * (time.perf_counter() - t0)
    s_empty = host_stats(torch)
    ms2, peak2 = phase(src, lens, acc)
    s2 = host_stats(torch)

    d = hashlib.sha256(acc.cpu().numpy().tobytes()).hexdigest()[:16]
    result(test="varsize", pid=os.getpid(), batches=args.batches, have_stats=int(bool(s2)),
           emptied=int(emptied), req_peak=max(peak1, peak2), req_bytes=4 * HID * sum(lens),
           phase1_ms="%.3f" % ms1, empty_ms="%.3f" % empty_ms, phase2_ms="%.3f" % ms2, digest=d,
           **stat_fields("p1", s1), **stat_fields("e", s_empty), **stat_fields("p2", s2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
