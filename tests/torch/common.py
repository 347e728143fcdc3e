"""common.py - helpers shared by the tests/torch programs.

Every program prints RESULT lines (``RESULT key=value ...``) that run-gpu.sh
and tables.py read, and exits 3 when there is no CUDA device.
"""
import hashlib
import sys

NO_DEVICE = 3


def result(**kv):
    """One RESULT line on stdout, keys in the order given."""
    print("RESULT " + " ".join("%s=%s" % (k, v) for k, v in kv.items()))
    sys.stdout.flush()


def need_cuda(torch):
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        sys.exit(NO_DEVICE)
    torch.cuda.init()
    torch.zeros(1, device="cuda")        # the context, before anything is timed
    torch.cuda.synchronize()


def weights(torch, m, device):
    """Position weights for row_sums: 1..1021, so that a moved or swapped
    chunk changes the sum, and a row of float32 bits (< 2**30 each for values
    in [0, 1), < 2**31 in general) times 1021 summed over m < 2**21 elements
    stays below 2**63."""
    return torch.arange(m, device=device, dtype=torch.int64) % 1021 + 1


def row_sums(torch, rows, w, chunk=32):
    """Exact weighted sums of the float32 bit patterns of each row of the 2-D
    tensor (or list of 1-D tensors) rows, as one int64 tensor on the CPU."""
    out = []
    n = len(rows)
    for s in range(0, n, chunk):
        part = rows[s:s + chunk]
        t = torch.stack(list(part)) if isinstance(part, list) else part
        bits = t.contiguous().view(torch.int32).to(torch.int64)
        out.append((bits * w).sum(dim=1).cpu())
        del bits, t
    return torch.cat(out)


def digest(torch, sums):
    """A short hex digest of an int64 tensor (for comparing processes)."""
    return hashlib.sha256(sums.contiguous().numpy().tobytes()).hexdigest()[:16]


def host_stats(torch):
    """PyTorch's pinned (host) allocator statistics, or {} where this torch
    has none (host_memory_stats appeared in 2.x)."""
    for mod in (torch.cuda, getattr(torch.cuda, "memory", None)):
        f = getattr(mod, "host_memory_stats", None) if mod is not None else None
        if f is not None:
            try:
                return dict(f())
            except Exception as e:          # report it, never fail on it
                print("host_memory_stats: %s" % e, file=sys.stderr)
                return {}
    return {}


def host_empty_cache(torch):
    """Empty PyTorch's pinned cache (its only cudaFreeHost/cudaHostUnregister
    calls); False when this torch has no way to."""
    f = getattr(torch._C, "_host_emptyCache", None)
    if f is None:
        return False
    f()
    return True
