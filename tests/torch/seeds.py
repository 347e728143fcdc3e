"""seeds.py - the seeds' experiment: N rows of 655360 floats to the GPU, four ways.

    a = torch.rand(N, 655360)
    for i in a: i.pin_memory().cuda(non_blocking=True)     # pin_nb
    for i in a: i.pin_memory().cuda()                      # pin
    for i in a: i.cuda(non_blocking=True)                  # pageable_nb
    for i in a: i.cuda()                                   # pageable

Each variant is timed over all rows, ending with torch.cuda.synchronize();
pass 1 of all four variants, then pass 2 (the allocators warm).  The CUDA
context is made before anything is timed.  Then each variant runs once more
keeping every row on the device, and the exact weighted sums of the bits that
arrived are compared with the same sums over `a` on the CPU.

Prints, per pass and variant, ``RESULT test=seeds variant=V pass=P ms=X``,
then per variant ``RESULT test=seeds variant=V digest=D ref=R match=0|1``
(D over the device rows, R over `a`).  run-gpu.sh runs it plainly and under
pincache and compares the digests across processes.
Exit 0; 1: a device digest differs from the CPU's; 3: no CUDA device.
"""
import argparse
import os
import sys
import time

import torch

from common import digest, need_cuda, result, row_sums, weights

COLS = 655360
VARIANTS = (
    ("pin_nb", lambda i: i.pin_memory().cuda(non_blocking=True)),
    ("pin", lambda i: i.pin_memory().cuda()),
    ("pageable_nb", lambda i: i.cuda(non_blocking=True)),
    ("pageable", lambda i: i.cuda()),
)


def timed(a, fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in a:
        fn(i)
    torch.cuda.synchronize()
    return 1e3 * (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=512)
    ap.add_argument("--passes", type=int, default=2)
    args = ap.parse_args()
    need_cuda(torch)
    torch.manual_seed(1234)
    a = torch.rand(args.rows, COLS)
    result(test="seeds", pid=os.getpid(), rows=args.rows, cols=COLS,
           torch=torch.__version__, mb_per_row="%.3f" % (COLS * 4 / 2**20))

    for p in range(1, args.passes + 1):
        for name, fn in VARIANTS:
            result(test="seeds", variant=name, **{"pass": p}, ms="%.3f" % timed(a, fn))

    ref = digest(torch, row_sums(torch, a, weights(torch, COLS, "cpu")))
    wd = weights(torch, COLS, "cuda")
    bad = 0
    for name, fn in VARIANTS:
        outs = [fn(i) for i in a]
        torch.cuda.synchronize()
        d = digest(torch, row_sums(torch, outs, wd))
        del outs
        bad += d != ref
        result(test="seeds", variant=name, digest=d, ref=ref, match=int(d == ref))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
