"""ranks.py - one rank of `torchrun --nproc_per_node=2` (both on GPU 0).

Each rank does a different amount of work, so that a merged report that
dropped or doubled a rank shows: rank r pins and copies (r + 2) * 8 batches of
1-4 MiB each way, copies as many pageable batches to the GPU, and empties
PyTorch's host cache at the end (its cudaFreeHost calls).  No process group:
the ranks are independent, which is all pincache's reports need.

Prints ``RESULT test=ranks rank=R pid=P ... mismatches=0``.
Exit 0; 1: bits differ on the device; 3: no CUDA device.
"""
import os
import sys

import torch

from common import host_empty_cache, need_cuda, result, row_sums, weights


def main():
    rank = int(os.environ.get("RANK", "0"))
    need_cuda(torch)
    torch.manual_seed(100 + rank)
    n = (rank + 2) * 8
    bad = 0
    for k in range(n):
        m = (1 + k % 4) << 18                       # floats: 1..4 MiB
        h = torch.rand(m)
        w = weights(torch, m, "cuda")
        want = row_sums(torch, h.view(1, -1), weights(torch, m, "cpu"))
        for d in (h.pin_memory().cuda(non_blocking=True), h.cuda()):
            bad += int(not torch.equal(row_sums(torch, d.view(1, -1), w), want))
        back = torch.empty(m, pin_memory=True)
        back.copy_(d, non_blocking=True)
        torch.cuda.synchronize()
        bad += int(not torch.equal(back, h))
    emptied = host_empty_cache(torch)
    result(test="ranks", rank=rank, pid=os.getpid(), batches=n, emptied=int(emptied),
           world=os.environ.get("WORLD_SIZE", "?"), mismatches=bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
