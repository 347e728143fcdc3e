"""torch_profile.py - torch.profiler (Kineto, which takes CUPTI) under pincache.

Makes pinned-memory calls first, so that pincache has started CUPTI (auto mode)
before the profiler asks for it and the hand-over path runs; then profiles a
fixed amount of GPU work and prints how many GPU kernels the profiler saw:

    KERNELS n

run-gpu.sh runs it with and without pincache and compares the counts.
Exit 3: no CUDA device.
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile


def gpu_kernels(prof):
    n = 0
    for e in prof.events():
        dev = getattr(e, "device_type", None)
        if dev is not None and str(dev).endswith("CUDA"):
            n += 1
    return n


def main():
    if not torch.cuda.is_available():
        return 3
    torch.manual_seed(7)
    # Pinned copies and synchronizations before profiling: pincache's first
    # calls (cudaHostAlloc, cudaMemcpyAsync, cudaStreamSynchronize).
    h = torch.rand(1 << 20).pin_memory()
    d = h.cuda(non_blocking=True)
    torch.cuda.synchronize()
    x = torch.rand(512, 512, device="cuda")
    y = x @ x
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            y = torch.relu(x @ y)
            d.add_(1.0)
        back = torch.empty(1 << 20, pin_memory=True)
        back.copy_(d, non_blocking=True)
        torch.cuda.synchronize()
    print("KERNELS %d" % gpu_kernels(prof))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
