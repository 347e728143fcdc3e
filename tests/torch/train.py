"""train.py - a small training loop fed by a DataLoader with forked workers.

A synthetic dataset of 4 MiB batches (256 x 4096 float32) made in the workers
(num_workers=2, fork), pin_memory on or off, copied with
.cuda(non_blocking=True), and a 3-layer MLP trained with SGD for
--epochs x --steps steps.  Deterministic algorithms, so the final weights are
bit-identical in every run with the same data: run-gpu.sh compares their
digest between plain and pincache runs and between pin_memory on and off.

Prints ``RESULT test=train pin=P epoch=E ms=X first_ms=F`` per epoch (the
last synchronizes; F: from the epoch's start to its first batch, which
includes forking the workers), then one line with the median step time (steps after the first
epoch, host side: from one batch's start to the next's), the digest of the
final weights, this process's pid, the pids of the workers that produced
batches (workers=pid,pid,...), and the pid and exit status of one more forked
child that exits normally (atexit handlers and destructors run in it, unlike
in the workers).  --hold-pinned-mb N pins N MiB before training and keeps
it: with PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True that is
registered memory, which every fork (each epoch's workers) copies.
Exit 3: no CUDA device.
"""
import argparse
import hashlib
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")   # before CUDA starts

import torch                                           # noqa: E402
from torch.utils.data import DataLoader, Dataset       # noqa: E402

from common import need_cuda, result                   # noqa: E402

CLASSES = 16


class Synthetic(Dataset):
    """Item i is a whole batch, a scaled copy of one of a few base batches
    made before the workers fork; with the pid of the worker that made it."""

    def __init__(self, n, base):
        self.n = n
        self.base = base
        self.batch = base.shape[1]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = self.base[i % len(self.base)] * (1.0 + (i % 7) / 8.0)
        y = (torch.arange(self.batch) * 31 + i) % CLASSES
        return x, y, os.getpid()


def forked_exit(wait_s=20.0):
    """Fork a child that leaves at once through a normal exit, so that
    atexit handlers and library destructors run in it (DataLoader workers
    leave with os._exit, which runs neither).  Returns (pid, status): the
    exit code, or "hung" when it had to be killed after wait_s."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        raise SystemExit(0)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < wait_s:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            return pid, os.waitstatus_to_exitcode(st) if hasattr(os, "waitstatus_to_exitcode") else st
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return pid, "hung"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pin", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--feat", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--hold-pinned-mb", type=int, default=0,
                    help="pin a tensor of this many MiB first and keep it (a pinned dataset, say)")
    args = ap.parse_args()
    need_cuda(torch)
    held = None
    if args.hold_pinned_mb:
        held = torch.ones(args.hold_pinned_mb << 20, dtype=torch.uint8).pin_memory()
    torch.manual_seed(99)
    torch.use_deterministic_algorithms(True, warn_only=True)   # a warning, never a failed run
    base = torch.randn(16, args.batch, args.feat)
    loader = DataLoader(Synthetic(args.steps, base), batch_size=None, shuffle=False,
                        num_workers=args.workers, pin_memory=bool(args.pin),
                        multiprocessing_context="fork")
    model = torch.nn.Sequential(
        torch.nn.Linear(args.feat, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, CLASSES)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lossf = torch.nn.CrossEntropyLoss()
    total = torch.zeros((), device="cuda")
    steps, workers = [], set()
    for ep in range(1, args.epochs + 1):
        torch.cuda.synchronize()
        t0 = prev = time.perf_counter()
        first = None
        for x, y, wpid in loader:
            if first is None:
                first = time.perf_counter() - t0
            workers.add(int(wpid))
            x = x.cuda(non_blocking=True)
            y = y.cuda(non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            total += loss.detach()
            now = time.perf_counter()
            if ep > 1:
                steps.append(now - prev)
            prev = now
        torch.cuda.synchronize()
        result(test="train", pin=args.pin, epoch=ep, ms="%.3f" % (1e3 * (time.perf_counter() - t0)),
               first_ms="%.3f" % (1e3 * (first or 0.0)))
    child, child_status = forked_exit()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    if held is not None:
        held_ok = bool(held[:: 1 << 20].eq(1).all())     # the parent still reads it
        result(test="train", held_mb=args.hold_pinned_mb, held_ok=int(held_ok))
    result(test="train", pin=args.pin, step_ms="%.4f" % (1e3 * statistics.median(steps)) if steps else "nan",
           loss_sum="%.6f" % total.item(), digest=h.hexdigest()[:16], pid=os.getpid(),
           workers=",".join(str(w) for w in sorted(workers)), child=child, child_status=child_status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
