"""tables.py - the checks and tables of tests/torch/run-gpu.sh.

    python3 tables.py SECTION DIR [ARG...]

reads what run-gpu.sh left in DIR for one section (the programs' stdout with
their RESULT lines, NAME.rc files with exit statuses, pincache's JSON
reports) and prints:

    POINT ok|fail|todo_ok|todo_fail|skip MESSAGE   one TAP point each
    # ...                                          diagnostics
    anything else                                  markdown, passed through

run-gpu.sh numbers the points.  todo_* points are performance targets: they
are reported, never tuned toward, and a miss does not fail the run.
"""
import glob
import json
import os
import statistics
import sys


def point(kind, msg):
    print("POINT %s %s" % (kind, msg))


def check(cond, msg):
    point("ok" if cond else "fail", msg)
    return cond


def target(cond, msg):
    point("todo_ok" if cond else "todo_fail", msg)


def diag(msg):
    for line in str(msg).splitlines():
        print("# " + line)


def lines(path):
    try:
        with open(path, errors="replace") as f:
            return f.readlines()
    except OSError:
        return []


def results(path):
    """The RESULT lines of a file, as dicts of strings (torchrun may prefix
    its workers' lines with the rank)."""
    out = []
    for line in lines(path):
        at = line.find("RESULT ")
        if at >= 0:
            out.append(dict(tok.partition("=")[::2] for tok in line[at:].split()[1:]))
    return out


def rc(path):
    """Exit status left by run-gpu.sh in PATH.rc (None when missing)."""
    try:
        with open(path + ".rc") as f:
            return int(f.read().strip() or "-1")
    except (OSError, ValueError):
        return None


def report(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        diag("cannot read %s: %s" % (path, e))
        return None


def rc_text(code):
    return {None: "did not run", 124: "timed out", 137: "killed after the timeout",
            3: "no CUDA device"}.get(code, "exit status %s" % code)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec="%.1f"):
    return "n/a" if x is None else spec % x


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def mib(x):
    return "n/a" if x is None else "%.1f" % (x / 2**20)


# ---------------------------------------------------------------- seeds
SEED_VARIANTS = (("pin_nb", "i.pin_memory().cuda(non_blocking=True)", "pinned"),
                 ("pin", "i.pin_memory().cuda()", "pinned"),
                 ("pageable_nb", "i.cuda(non_blocking=True)", "pageable"),
                 ("pageable", "i.cuda()", "pageable"))


def cmd_seeds(d, reps, passes):
    reps, passes = int(reps), int(passes)
    runs, bad = {}, []
    for mode in ("plain", "shim"):
        for k in range(1, reps + 1):
            base = "%s/seeds.%s.%d" % (d, mode, k)
            res = results(base + ".out")
            times = [r for r in res if "ms" in r]
            digs = [r for r in res if "digest" in r]
            code = rc(base)
            runs[mode, k] = res
            if code != 0 or len(times) != 4 * passes or len(digs) != 4:
                bad.append("%s %d: %s, %d timings, %d digests" % (mode, k, rc_text(code), len(times), len(digs)))
    check(not bad, "seeds: %d plain and %d pincache runs completed" % (reps, reps))
    for b in bad:
        diag(b)

    # bit-identical: every digest of every run equals the CPU's digest of `a`
    digs = [(m, k, r["variant"], r["digest"], r["ref"]) for (m, k), res in runs.items()
            for r in res if "digest" in r]
    refs = {x[4] for x in digs}
    wrong = [x for x in digs if x[3] != x[4]]
    check(digs and not wrong and len(refs) == 1 and len(digs) == 8 * reps,
          "seeds: what reached the GPU is bit-identical in all %d variant runs, plain and pincache "
          "(digest %s)" % (len(digs), ",".join(sorted(refs)) or "none"))
    for x in wrong:
        diag("mismatch: %s run %d %s: device %s, CPU %s" % x)

    # pincache's copy accounting against what the program did
    rows = None
    for res in runs.values():
        for r in res:
            if "rows" in r:
                rows = int(r["rows"])
    expect = None if rows is None else rows * (passes + 1) * 2
    acc_bad, staged = [], []
    for k in range(1, reps + 1):
        j = report("%s/seeds.shim.%d.json" % (d, k))
        if j is None:
            acc_bad.append("run %d: no report" % k)
            continue
        s, c = j["stats"], j["copies"]
        got = (c["h2d_pageable"]["calls"], c["h2d_pinned"]["calls"],
               s["stage_h2d_calls"] + s["stage_h2d_driver_calls"])
        staged.append("run %d: %d of %d pageable copies staged (%s MiB), %d left to the runtime, "
                      "%d ring busy" % (k, s["stage_h2d_calls"], got[0], mib(s["stage_h2d_bytes"]),
                                        s["stage_h2d_driver_calls"], s["stage_busy"]))
        if expect is None or got != (expect, expect, expect):
            acc_bad.append("run %d: h2d_pageable %d, h2d_pinned %d, staged+runtime %d; expected %s each"
                           % ((k,) + got + (expect,)))
    check(expect is not None and not acc_bad,
          "seeds: pincache's report counts %s pageable and %s pinned host-to-device copies, as made"
          % (expect, expect))
    for x in acc_bad + staged:
        diag(x)

    # timings
    med = {}
    for mode in ("plain", "shim"):
        for name, _, _ in SEED_VARIANTS:
            for p in range(1, passes + 1):
                xs = [float(r["ms"]) for k in range(1, reps + 1) for r in runs[mode, k]
                      if r.get("variant") == name and r.get("pass") == str(p) and "ms" in r]
                med[mode, name, p] = (median(xs), xs)
    print()
    print("#### The seeds' experiment: %s rows of 655360 float32 (2.5 MiB each), ms per pass over all rows,"
          " median of %d runs each" % (rows, reps))
    print()
    print("| variant | pass | plain ms | pincache ms | pincache/plain | speedup | plain runs | pincache runs |")
    print("|---|---|---|---|---|---|---|---|")
    for name, code, _ in SEED_VARIANTS:
        for p in range(1, passes + 1):
            a, xa = med["plain", name, p]
            b, xb = med["shim", name, p]
            print("| `%s` | %d | %s | %s | %s | %s | %s | %s |" % (
                code, p, fmt(a), fmt(b), fmt(ratio(b, a), "%.3f"), fmt(ratio(a, b), "%.2fx"),
                " ".join("%.1f" % x for x in xa), " ".join("%.1f" % x for x in xb)))
    print()
    print("Pass 1 is the first pass of each variant after the CUDA context exists (the seeds' "
          "measurement); pass 2 repeats it with PyTorch's and pincache's caches warm.")
    print()
    for name, code, kind in SEED_VARIANTS:
        a, b = med["plain", name, 1][0], med["shim", name, 1][0]
        r = ratio(b, a)
        if kind == "pageable":
            sp = ratio(a, b)
            target(sp is not None and sp >= 3.0,
                   "seeds: `%s` %s faster under pincache, pass 1 (%s ms -> %s ms; target >= 3x)"
                   % (code, fmt(sp, "%.2fx"), fmt(a), fmt(b)))
        else:
            target(r is not None and r <= 1.02,
                   "seeds: `%s` under pincache at %s of plain, pass 1 (%s ms -> %s ms; target <= 1.02)"
                   % (code, fmt(r, "%.3f"), fmt(a), fmt(b)))
    # Issue 19, "pageable as fast as pinned": the pageable loop under pincache
    # against the plain pinned loop, in the same runs, each pass.
    for p in range(1, passes + 1):
        a, b = med["plain", "pin_nb", p][0], med["shim", "pageable", p][0]
        r = ratio(b, a)
        target(r is not None and r <= 1.0,
               "seeds: `i.cuda()` under pincache at %s of plain `i.pin_memory().cuda(non_blocking=True)`, "
               "pass %d (%s ms against %s ms; issue 19 target <= 1.00)" % (fmt(r, "%.3f"), p, fmt(b), fmt(a)))


# ---------------------------------------------------------------- train
def cmd_train(d, epochs, reps="1"):
    epochs, reps = int(epochs), int(reps)
    runs, bad = {}, []
    for pin in ("1", "0"):
        for mode in ("plain", "shim"):
            base = "%s/train.%s.pin%s" % (d, mode, pin)
            res = results(base + ".out")
            code = rc(base)
            fin = [r for r in res if "digest" in r]
            runs[mode, pin] = res
            if code != 0 or not fin or len([r for r in res if "epoch" in r]) != epochs:
                bad.append("%s pin_memory=%s: %s" % (mode, pin, rc_text(code)))
    check(not bad, "train: 4 DataLoader runs (num_workers=2, fork; plain and pincache; pin_memory "
          "on and off) completed, none hung")
    for b in bad:
        diag(b)

    # More pin_memory=True pairs, for the epoch target only (train.MODE.pin1.rK).
    more, more_bad, more_digs = {"plain": [], "shim": []}, [], set()
    for k in range(2, reps + 1):
        for mode in ("plain", "shim"):
            base = "%s/train.%s.pin1.r%d" % (d, mode, k)
            res = results(base + ".out")
            fin = [r for r in res if "digest" in r]
            if rc(base) != 0 or not fin or len([r for r in res if "epoch" in r]) != epochs:
                more_bad.append("%s pin_memory=True, pair %d: %s" % (mode, k, rc_text(rc(base))))
                continue
            more[mode].append(res)
            more_digs.add(fin[0]["digest"])
    if reps > 1:
        check(not more_bad, "train: %d more pin_memory=True pairs completed, none hung" % (reps - 1))
        for b in more_bad:
            diag(b)

    fins = {key: next((r for r in res if "digest" in r), None) for key, res in runs.items()}
    digs = {k: v["digest"] for k, v in fins.items() if v}
    check(len(digs) == 4 and len(set(digs.values()) | more_digs) == 1,
          "train: final weights bit-identical in the 4 runs and the %d more (digest %s)"
          % (len(more["plain"]) + len(more["shim"]), ",".join(sorted(set(digs.values()) | more_digs))))
    if len(set(digs.values())) > 1:
        diag(" ".join("%s/pin%s=%s" % (k[0], k[1], v) for k, v in sorted(digs.items())))

    # forked workers: the only report in each folder is the parent's
    fork_bad, seen = [], []
    for pin in ("1", "0"):
        fin = fins.get(("shim", pin))
        files = sorted(os.path.basename(f) for f in glob.glob("%s/train.shim.pin%s.reports/*" % (d, pin)))
        if not fin:
            fork_bad.append("pin_memory=%s: the run did not finish" % pin)
            continue
        workers = [w for w in fin["workers"].split(",") if w]
        seen.append("pin_memory=%s: parent %s, worker pids %s; reports: %s"
                    % (pin, fin["pid"], " ".join(workers), " ".join(files) or "none"))
        # the extra child's report, if any, is the next point's
        if sorted(set(files) - {"%s.json" % fin["child"]}) != ["%s.json" % fin["pid"]]:
            fork_bad.append("pin_memory=%s: reports %s, expected only %s.json" % (pin, files, fin["pid"]))
        if len(set(workers)) < 2 or fin["pid"] in workers:
            fork_bad.append("pin_memory=%s: batches did not come from forked workers (%s)" % (pin, workers))
    check(not fork_bad, "train: under pincache the forked DataLoader workers wrote no report; "
          "the parent wrote one (PINCACHE_REPORT=DIR/%p.json)")
    for x in fork_bad + seen:
        diag(x)

    # one more forked child, which exits normally: no report, and it exits as it does plainly
    exit_bad, said = [], []
    for pin in ("1", "0"):
        fs, fp = fins.get(("shim", pin)), fins.get(("plain", pin))
        if not fs or not fp:
            exit_bad.append("pin_memory=%s: the runs did not finish" % pin)
            continue
        child = "%s.json" % fs["child"]
        have = os.path.exists("%s/train.shim.pin%s.reports/%s" % (d, pin, child))
        said.append("pin_memory=%s: child %s exited %s under pincache (%s plainly), report %s"
                    % (pin, fs["child"], fs["child_status"], fp["child_status"], child if have else "none"))
        if have or fs["child_status"] != fp["child_status"] or fs["child_status"] == "hung":
            exit_bad.append(said[-1])
    check(not exit_bad, "train: a forked child that exits normally (atexit and destructors run) wrote no "
          "report and exited as it does plainly")
    for x in said:
        diag(x)

    def epoch_ms(res, first, extra=(), key="ms"):
        xs = [float(r[key]) for rr in (res,) + tuple(extra) for r in rr
              if "epoch" in r and key in r and (r["epoch"] == "1") == first]
        return median(xs)

    print()
    print("#### Training loop: DataLoader num_workers=2 (fork), 4 MiB batches, %d epochs; epoch ms "
          "(epochs 2..%d: median; pin_memory=True: over %d run(s) each), median step ms (host side, "
          "epochs 2..%d, first run)" % (epochs, epochs, 1 + len(more["shim"]), epochs))
    print()
    print("| pin_memory | epoch 1 plain | epoch 1 pincache | epoch plain | epoch pincache | pincache/plain "
          "| step plain | step pincache | pincache/plain |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    for pin in ("1", "0"):
        p, s = runs["plain", pin], runs["shim", pin]
        fp, fs = fins.get(("plain", pin)), fins.get(("shim", pin))
        stp = float(fp["step_ms"]) if fp else None
        sts = float(fs["step_ms"]) if fs else None
        mp, ms = (more["plain"], more["shim"]) if pin == "1" else ((), ())
        ep, es = epoch_ms(p, False, mp), epoch_ms(s, False, ms)
        rows[pin] = (ep, es)
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "True" if pin == "1" else "False", fmt(epoch_ms(p, True)), fmt(epoch_ms(s, True)),
            fmt(ep), fmt(es), fmt(ratio(es, ep), "%.3f"), fmt(stp, "%.3f"), fmt(sts, "%.3f"),
            fmt(ratio(sts, stp), "%.3f")))
    print()
    # Where the epoch's time goes: the wait for its first batch (the workers
    # are forked at each epoch's start) and the rest.
    print("| pin_memory | first batch plain | first batch pincache | rest of epoch plain | "
          "rest of epoch pincache | rest pincache/plain |")
    print("|---|---|---|---|---|---|")
    for pin in ("1", "0"):
        mp, ms = (more["plain"], more["shim"]) if pin == "1" else ((), ())
        fp = epoch_ms(runs["plain", pin], False, mp, "first_ms")
        fs = epoch_ms(runs["shim", pin], False, ms, "first_ms")
        rp = [float(r["ms"]) - float(r["first_ms"]) for rr in (runs["plain", pin],) + tuple(mp) for r in rr
              if "epoch" in r and "first_ms" in r and r["epoch"] != "1"]
        rs = [float(r["ms"]) - float(r["first_ms"]) for rr in (runs["shim", pin],) + tuple(ms) for r in rr
              if "epoch" in r and "first_ms" in r and r["epoch"] != "1"]
        print("| %s | %s | %s | %s | %s | %s |" % (
            "True" if pin == "1" else "False", fmt(fp), fmt(fs), fmt(median(rp)), fmt(median(rs)),
            fmt(ratio(median(rs), median(rp)), "%.3f")))
    print()
    # Each pair on its own, to show the spread the pooled figure averages over.
    pairs = [(runs["plain", "1"], runs["shim", "1"])] + list(zip(more["plain"], more["shim"]))
    per = []
    for a, b in pairs:
        pa, pb = epoch_ms(a, False), epoch_ms(b, False)
        per.append("%s/%s = %s" % (fmt(pb), fmt(pa), fmt(ratio(pb, pa), "%.3f")))
    print("pin_memory=True, each pair (median epoch pincache/plain, ms): " + "; ".join(per))
    print()
    ep, es = rows["1"]
    r = ratio(es, ep)
    target(r is not None and r <= 1.02,
           "train: pin_memory=True epoch under pincache at %s of plain (%s ms -> %s ms; target <= 1.02)"
           % (fmt(r, "%.3f"), fmt(ep), fmt(es)))


# ---------------------------------------------------------------- one plain and one pincache run
def pair(d, name):
    """The last RESULT line of NAME.plain and of NAME.shim, pincache's
    report of the second, and whether both runs completed."""
    p = results("%s/%s.plain.out" % (d, name))
    s = results("%s/%s.shim.out" % (d, name))
    p = p[-1] if p else None
    s = s[-1] if s else None
    j = report("%s/%s.shim.json" % (d, name))
    a, b = rc("%s/%s.plain" % (d, name)), rc("%s/%s.shim" % (d, name))
    ran = a == 0 and b == 0 and p is not None and s is not None and j is not None
    if not ran:
        diag("%s plain: %s; pincache: %s" % (name, rc_text(a), rc_text(b)))
    return p, s, j, ran


# ---------------------------------------------------------------- varsize
def cmd_varsize(d):
    p, s, j, ran = pair(d, "varsize")
    check(ran and p["digest"] == s["digest"],
          "varsize: plain and pincache runs completed, GPU sums bit-identical (%s, %s)"
          % (p and p["digest"], s and s["digest"]))
    if not ran:
        return
    st = j["stats"]
    have = s.get("have_stats") == "1" and int(s.get("p2_num_host_alloc", "0")) > 0
    if have:
        ta, tf = int(s["p2_num_host_alloc"]), int(s["p2_num_host_free"])
        check(st["alloc_calls"] == ta and st["free_calls"] == tf and st["free_cached"] == tf,
              "varsize: pincache saw PyTorch's pinned calls: %d allocations (PyTorch: %d), %d frees "
              "(PyTorch: %d), %d kept in the cache" % (st["alloc_calls"], ta, st["free_calls"], tf,
                                                       st["free_cached"]))
        tp = int(s["p2_allocated_bytes_peak"])
        check(st["requested_bytes_peak"] == tp,
              "varsize: pincache's requested_bytes_peak %d = PyTorch's allocated_bytes.peak %d"
              % (st["requested_bytes_peak"], tp))
    else:
        point("skip", "varsize: this torch's host_memory_stats() has no allocation counts to compare with")
    if s.get("emptied") == "1":
        check(st["alloc_hits"] > 0 and st["alloc_hits"] + st["alloc_misses"] == st["alloc_calls"],
              "varsize: after PyTorch emptied its host cache, pincache served %d of %d allocations "
              "from its own" % (st["alloc_hits"], st["alloc_calls"]))
    else:
        point("skip", "varsize: this torch cannot empty its host cache (torch._C._host_emptyCache)")

    req = int(s["req_peak"])
    print()
    print("#### Variable-size pinned batches: %s batches of 32..4096 x 1024 float32 (128 KiB .. 16 MiB), "
          "4 alive at a time; phase 2 repeats them after PyTorch's host cache was emptied" % s["batches"])
    print()
    print("| pinned memory, MiB | plain | pincache |")
    print("|---|---|---|")
    print("| the program's live request, peak | %s | %s |" % (mib(int(p["req_peak"])), mib(req)))
    if have:
        print("| PyTorch's pinned blocks (`host_memory_stats` allocated_bytes.peak) | %s | %s |"
              % (mib(int(p["p2_allocated_bytes_peak"])), mib(int(s["p2_allocated_bytes_peak"]))))
        print("| PyTorch's blocks / the program's request | %s | %s |"
              % (fmt(int(p["p2_allocated_bytes_peak"]) / int(p["req_peak"]), "%.2f"),
                 fmt(int(s["p2_allocated_bytes_peak"]) / req, "%.2f")))
    print("| pincache: requested_bytes_peak (what PyTorch asked for) | | %s |" % mib(st["requested_bytes_peak"]))
    print("| pincache: live_bytes_peak (blocks handed to PyTorch) | | %s |" % mib(st["live_bytes_peak"]))
    print("| pincache: cached_bytes_peak (idle in its cache) | | %s |" % mib(st["cached_bytes_peak"]))
    print("| pincache: held_bytes_peak (real pinned blocks it owns) | | %s |" % mib(st["held_bytes_peak"]))
    print("| pincache: held / the program's request | | %s |" % fmt(st["held_bytes_peak"] / req, "%.2f"))
    print("| real `cudaHostAlloc` calls | %s | %d |"
          % (p.get("p2_num_host_alloc", "n/a"), st["real_alloc_calls"]))
    print("| `cudaHostAlloc` calls PyTorch made | %s | %d (%d hits) |"
          % (p.get("p2_num_host_alloc", "n/a"), st["alloc_calls"], st["alloc_hits"]))
    print()
    print("| time, ms | plain | pincache | pincache/plain |")
    print("|---|---|---|---|")
    for k, label in (("phase1_ms", "phase 1"), ("empty_ms", "emptying PyTorch's host cache"),
                     ("phase2_ms", "phase 2 (after emptying)")):
        a, b = float(p[k]), float(s[k])
        print("| %s | %.2f | %.2f | %s |" % (label, a, b, fmt(ratio(b, a), "%.3f")))
    print()


# ---------------------------------------------------------------- register
def cmd_register(d):
    p, s, j, ran = pair(d, "register")
    check(ran and p["digest"] == s["digest"] and s["mismatches"] == "0" and s["unpinned"] == "0",
          "register: PYTORCH_CUDA_ALLOC_CONF=pinned_use_cuda_host_register:True, plain and pincache "
          "runs completed, bits arrived, identical (%s, %s)" % (p and p["digest"], s and s["digest"]))
    if not ran:
        return
    st, a = j["stats"], j["apis"]
    diag("PyTorch's counters: plain %s; pincache %s" % (
        " ".join("%s=%s" % (k, p[k]) for k in ("num_host_alloc", "num_host_free") if k in p) or "none",
        " ".join("%s=%s" % (k, s[k]) for k in ("num_host_alloc", "num_host_free") if k in s) or "none"))
    want = int(s["expect_register"])
    check(st["register_calls"] == want and a["cudaHostRegister"]["calls"] == want and st["alloc_calls"] == 0
          and st["register_bytes"] >= int(s["asked_bytes"]),
          "register: the report counts %d cudaHostRegister calls (expected %d; apis: %d) for %s MiB "
          "(asked %s MiB), and no cudaHostAlloc (%d)" % (
              st["register_calls"], want, a["cudaHostRegister"]["calls"], mib(st["register_bytes"]),
              mib(int(s["asked_bytes"])), st["alloc_calls"]))
    wu = int(s["expect_unregister"])
    if wu < 0:
        point("skip", "register: this torch cannot empty its host cache, so it never unregisters")
    else:
        check(st["unregister_calls"] == wu and a["cudaHostUnregister"]["calls"] == wu
              and st["registered_bytes"] == 0,
              "register: %d cudaHostUnregister calls counted (expected %d; apis: %d), %d bytes left "
              "registered at exit (peak %s MiB)" % (st["unregister_calls"], wu, a["cudaHostUnregister"]["calls"],
                                                   st["registered_bytes"], mib(st["registered_bytes_peak"])))


# ---------------------------------------------------------------- profiler
def cmd_profile(d):
    k = {}
    for m in ("plain", "default", "auto"):
        code = rc("%s/profile.%s" % (d, m))
        v = [line.split()[1] for line in lines("%s/profile.%s.out" % (d, m)) if line.startswith("KERNELS ")]
        k[m] = int(v[-1]) if v and code == 0 else None
        if k[m] is None:
            diag("%s: %s" % (m, rc_text(code)))
    check(k["plain"] and k["plain"] == k["default"] == k["auto"],
          "profiler: torch.profiler saw the same GPU kernels plain (%s), under pincache (%s) and "
          "under pincache with PINCACHE_CUPTI=auto (%s)" % (k["plain"], k["default"], k["auto"]))
    say = []
    ok = True
    for m in ("default", "auto"):
        j = report("%s/profile.%s.json" % (d, m))
        if j is None:
            ok = False
            say.append("%s: no report" % m)
            continue
        s = j["stats"]
        how = ("handed over" if s["cupti_handed_over"] else "declined" if s["cupti_declined"]
               else "unavailable" if s["cupti_unavailable"] else "kept" if s["cupti_enabled"] else "never taken")
        say.append("%s: %s (enabled %d, handed_over %d, declined %d)" % (
            "PINCACHE_CUPTI=auto" if m == "auto" else "pincache's default", how, s["cupti_enabled"], s["cupti_handed_over"], s["cupti_declined"]))
        line = [x for x in j.get("summary", []) if x.startswith("timeline:")]
        if line:
            say.append("  summary: " + line[0])
        # Still holding CUPTI after the profiler asked for it would have broken the profiler.
        ok &= how != "kept"
    check(ok, "profiler: pincache's report says what became of CUPTI: " + "; ".join(
        x for x in say if not x.startswith("  ")))
    for x in say:
        diag(x)


# ---------------------------------------------------------------- torchrun + merge
def add_up(reps, merged, where, skip=()):
    """Differences between merged and the sum (max for max_*) of reps, for
    every number of the object at path where."""
    out = []

    def get(j):
        for k in where:
            j = j[k]
        return j

    objs = [get(r) for r in reps]
    m = get(merged)
    for key, v in objs[0].items():
        if key in skip or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        vals = [o[key] for o in objs]
        want = max(vals) if key.startswith("max_") else sum(vals)
        if m.get(key) != want:
            out.append("%s.%s: merged %s, ranks %s" % (".".join(where), key, m.get(key), vals))
    return out


def cmd_ranks(d):
    res = results(d + "/torchrun.out")
    code = rc(d + "/torchrun")
    byrank = {r["rank"]: r for r in res if r.get("test") == "ranks"}
    check(code == 0 and sorted(byrank) == ["0", "1"] and all(r["world"] == "2" and r["mismatches"] == "0"
                                                              for r in byrank.values()),
          "torchrun --nproc_per_node=2 under pincache: both ranks ran, bits arrived (%s)" % rc_text(code))
    files = sorted(os.path.basename(f) for f in glob.glob(d + "/reports/*"))
    reps, why = [], []
    for r in ("0", "1"):
        j = report("%s/reports/rank%s.json" % (d, r))
        w = byrank.get(r)
        if j is None or w is None:
            why.append("rank %s: report %s, worker %s" % (r, j is not None, w is not None))
            continue
        reps.append(j)
        if str(j.get("rank")) != r or str(j.get("pid")) != w["pid"]:
            why.append("rank%s.json: rank %s pid %s, but the worker of rank %s is pid %s"
                       % (r, j.get("rank"), j.get("pid"), r, w["pid"]))
    check(files == ["rank0.json", "rank1.json"] and not why,
          "torchrun: PINCACHE_REPORT=rank%%r.json gave one report per rank, each the worker's own "
          "(files: %s)" % " ".join(files))
    for x in why:
        diag(x)
    m = report(d + "/merged.json")
    if len(reps) != 2 or m is None:
        check(False, "pincache merge: merged the two reports")
        return
    diff = add_up(reps, m, ("stats",))
    for api in reps[0]["apis"]:
        diff += add_up(reps, m, ("apis", api), skip=("p50_ns", "p99_ns"))
        hs = sum(c for r in reps for _, c in r["apis"][api].get("hist", []))
        hm = sum(c for _, c in m["apis"][api].get("hist", []))
        if hs != hm:
            diff.append("apis.%s.hist: merged %d calls, ranks %d" % (api, hm, hs))
    for kind in reps[0]["copies"]:
        diff += add_up(reps, m, ("copies", kind), skip=("gbps",))
    n = len(m["stats"])
    check(not diff and m["stats"]["alloc_calls"] > 0,
          "pincache merge: the merged totals are the sums of the 2 ranks' reports (%d stats, every api "
          "and copy field; %d allocations, %d staged copies)" % (n, m["stats"]["alloc_calls"],
                                                                 m["stats"]["stage_h2d_calls"]))
    for x in diff[:20]:
        diag(x)


# ---------------------------------------------------------------- regfork
REGFORK_RUNS = (("alloc", "plain, PyTorch's default pinning (cudaHostAlloc)"),
                ("plain", "plain, pinned_use_cuda_host_register"),
                ("shim", "pincache, pinned_use_cuda_host_register"),
                ("dontfork", "pincache with PINCACHE_REGISTER_DONTFORK=1, pinned_use_cuda_host_register"))


def cmd_regfork(d, mb):
    mb = int(mb)
    runs, bad, digs = {}, [], set()
    for name, _ in REGFORK_RUNS:
        res = results("%s/regfork.%s.out" % (d, name))
        fin = next((r for r in res if "digest" in r), None)
        held = next((r for r in res if "held_ok" in r), None)
        runs[name] = res
        if rc("%s/regfork.%s" % (d, name)) != 0 or not fin or not held or held["held_ok"] != "1":
            bad.append("%s: %s, held memory read back: %s" % (name, rc_text(rc("%s/regfork.%s" % (d, name))),
                                                            held and held["held_ok"]))
        elif fin:
            digs.add(fin["digest"])
    check(not bad and len(digs) == 1,
          "regfork: %d MiB held pinned; the 4 runs completed, the parent read its held memory back, "
          "final weights identical (%s)" % (mb, ",".join(sorted(digs))))
    for b in bad:
        diag(b)
    js, jd = report(d + "/regfork.shim.json"), report(d + "/regfork.dontfork.json")
    if js is None or jd is None:
        check(False, "regfork: pincache's reports written")
        return
    ss, sd = js["stats"], jd["stats"]
    per = ss["fork_registered_bytes"] / ss["forks_registered"] if ss["forks_registered"] else 0
    check(ss["forks_registered"] > 0 and per >= mb << 20,
          "regfork: the report counts the forks that copied registered memory: %d of %d, %.1f MiB "
          "each" % (ss["forks_registered"], ss["forks"], per / 2**20))
    # MADV_DONTFORK marks whole pages: a range that does not start and end
    # on a page boundary leaves at most two partial pages that fork() still
    # copies (run 18: 5 forks, 8 KiB each).  What the option must stop is
    # the held memory itself; the report must not recommend anything for it.
    edges = sd["forks"] * sd["register_calls"] * 2 * 4096
    forky = [t for t in jd.get("recommendations", []) if "fork" in t]
    check(sd["forks"] > 0 and sd["fork_registered_bytes"] <= edges and not forky and
          sd["registered_dontfork_bytes_peak"] >= mb << 20,
          "regfork: with PINCACHE_REGISTER_DONTFORK=1 no fork copied the held memory: %d of %d forks "
          "copied %.1f KiB in all, at most the partial end pages of the %d ranges (%.1f KiB); %.1f MiB "
          "marked at the peak; fork recommendations: %d" %
          (sd["forks_registered"], sd["forks"], sd["fork_registered_bytes"] / 1024, sd["register_calls"],
           edges / 1024, sd["registered_dontfork_bytes_peak"] / 2**20, len(forky)))

    def med(name, key):
        return median([float(r[key]) for r in runs[name] if "epoch" in r and key in r and r["epoch"] != "1"])
    print()
    print("#### fork() and registered memory: DataLoader num_workers=2 (fork), %d MiB held pinned, "
          "median of epochs 2..3, ms" % mb)
    print()
    print("| run | wait for the first batch (forks the workers) | epoch |")
    print("|---|---|---|")
    for name, text in REGFORK_RUNS:
        print("| %s | %s | %s |" % (text, fmt(med(name, "first_ms")), fmt(med(name, "ms"))))
    print()
    a, p, k = med("alloc", "first_ms"), med("plain", "first_ms"), med("dontfork", "first_ms")
    target(a is not None and k is not None and k <= 1.25 * a,
           "regfork: with PINCACHE_REGISTER_DONTFORK=1 the first batch waited %s ms, at most 1.25x the "
           "cudaHostAlloc run's %s ms (registered memory, plainly: %s ms)" % (fmt(k), fmt(a), fmt(p)))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd = {"seeds": cmd_seeds, "train": cmd_train, "varsize": cmd_varsize, "register": cmd_register,
           "profile": cmd_profile, "ranks": cmd_ranks, "regfork": cmd_regfork}.get(sys.argv[1])
    if cmd is None:
        print("tables.py: unknown section %s" % sys.argv[1], file=sys.stderr)
        return 2
    try:
        cmd(*sys.argv[2:])
    except Exception as e:      # a broken file is a failed point, not a crash of the driver
        point("fail", "%s: the checks could not read the results (%s: %s)" % (sys.argv[1], type(e).__name__, e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
