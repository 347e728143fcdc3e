"""register.py - PyTorch's cudaHostRegister path for pinned memory.

Run with PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True: PyTorch
then pins with malloc + cudaHostRegister instead of cudaHostAlloc, and its
host cache, when emptied, calls cudaHostUnregister + free.

Two rounds: pin --blocks tensors of distinct sizes (each needs a block of its
own, since all are alive at once and PyTorch's host cache starts empty), copy
each to the GPU and check the bits arrived, drop them, synchronize and empty
PyTorch's host cache.  So the program expects 2 x blocks registrations and as
many unregistrations; run-gpu.sh checks that pincache's report counts them.

Prints ``RESULT test=register ...`` with the expected counts, the bytes asked
for, whether the cache could be emptied, PyTorch's own counters where this
torch has host_memory_stats, and a digest of the device sums.
Exit 0; 1: bits differ on the device; 3: no CUDA device.
"""
import argparse
import hashlib
import os
import sys

import torch

from common import host_empty_cache, host_stats, need_cuda, result, row_sums, weights


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=6)
    args = ap.parse_args()
    need_cuda(torch)
    torch.manual_seed(11)
    # 96 KiB .. 3 MiB (+28 bytes): 128 KiB .. 4 MiB, all distinct, once PyTorch rounds them up
    sizes = [(24 << 10) * (1 << k) + 7 for k in range(args.blocks)]
    h = hashlib.sha256()
    asked, emptied, bad, unpinned = 0, 1, 0, 0
    for rnd in range(2):
        pinned = []
        for n in sizes:
            p = torch.rand(n).pin_memory()
            asked += 4 * n
            pinned.append(p)
        for p in pinned:
            d = p.cuda(non_blocking=True)
            w = weights(torch, p.numel(), "cuda")
            got = row_sums(torch, d.view(1, -1), w)
            want = row_sums(torch, p.view(1, -1), weights(torch, p.numel(), "cpu"))
            bad += int(not torch.equal(got, want))
            h.update(got.numpy().tobytes())
            unpinned += int(not p.is_pinned())
        del pinned, p, d
        torch.cuda.synchronize()
        emptied &= int(host_empty_cache(torch))
    s = host_stats(torch)
    extra = {k.replace(".", "_"): int(s[k]) for k in
             ("num_host_alloc", "num_host_free", "allocated_bytes.allocated") if k in s}
    result(test="register", pid=os.getpid(), blocks=args.blocks, expect_register=2 * args.blocks,
           expect_unregister=2 * args.blocks if emptied else -1, asked_bytes=asked, emptied=emptied,
           alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), mismatches=bad, unpinned=unpinned,
           digest=h.hexdigest()[:16], **extra)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
