#!/usr/bin/env bash
# fastvar.sh BUILDDIR OUTDIR [ROUNDS] - why fast blocks cost different
# amounts from run to run (issue 18; docs/runs.md runs 59-62): cold 64 MiB
# and 1 GiB allocations and varsize under pincache, with the default fast
# path and with each test knob that may explain the spread, interleaved in
# ROUNDS rounds (default 3), plain cudaHostAlloc alongside:
#   default   PINCACHE_FAST_ALLOC=on
#   advice    PINCACHE_TEST_FAST_SHMEM_ADVICE=1 (shared chunks advised for
#             huge pages, as in runs 58-60, where the host gives shmem none)
#   syncunmap PINCACHE_TEST_FAST_SYNC_UNMAP=1 (no reaper thread: does its
#             unmapping slow the mapping of new blocks? varsize only)
#   populate  PINCACHE_TEST_FAST_POPULATE=1 (no fallocate fill)
# A markdown table on stdout: the median per variant and size, and the
# report's split of a fast block's time (map / fault / register, ms per
# block).  Needs a GPU; about 2 minutes with 3 rounds on an H200.
set -u
unset LD_PRELOAD
[ $# -ge 2 ] || { echo "usage: fastvar.sh BUILDDIR OUTDIR [ROUNDS]" >&2; exit 2; }
builddir=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
rounds=${3:-3}
lib=$builddir/src/.libs/libpincache.so
bin=$builddir/tests/bench
if ! [ -x "$bin/coldalloc" ] || ! [ -x "$bin/varsize" ] || ! [ -f "$lib" ]; then
	echo "fastvar.sh: build coldalloc and varsize first (the cold section of scripts/h200.sh does)" >&2
	exit 2
fi
"$bin/coldalloc" probe >/dev/null 2>&1 || { echo "fastvar.sh: no CUDA device"; exit 0; }

env_of() {
	case $1 in
	plain) ;;
	default) echo "PINCACHE_FAST_ALLOC=on" ;;
	advice) echo "PINCACHE_TEST_FAST_SHMEM_ADVICE=1" ;;
	syncunmap) echo "PINCACHE_TEST_FAST_SYNC_UNMAP=1" ;;
	populate) echo "PINCACHE_TEST_FAST_POPULATE=1" ;;
	esac
}

# run NAME VARIANT CMD...: one process, its output in NAME.out, its report NAME.json
run() {
	local name=$1 v=$2
	shift 2
	if [ "$v" = plain ]; then
		"$@" >"$out/$name.out" 2>"$out/$name.err"
	else
		# shellcheck disable=SC2046
		env $(env_of "$v") PINCACHE_REPORT="$out/$name.json" LD_PRELOAD="$lib" "$@" \
			>"$out/$name.out" 2>"$out/$name.err"
	fi
}

t0=$(date +%s)
for r in $(seq 1 "$rounds"); do
	for v in plain default advice populate; do
		run "alloc.64M.$v.$r" "$v" "$bin/coldalloc" alloc 67108864 5
		run "alloc.1G.$v.$r" "$v" "$bin/coldalloc" alloc 1073741824 3
	done
	for v in default advice syncunmap populate; do
		run "varsize.$v.$r" "$v" "$bin/varsize" --ops 20000 --max-live 48
	done
	echo "fastvar: round $r done ($(($(date +%s) - t0)) s)" >&2
done

python3 - "$out" "$rounds" <<'PY'
import json, os, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def med(xs):
    return statistics.median(xs) if xs else float("nan")
def alloc_ms(path):
    try:
        m = re.search(r"COLDALLOC alloc .* ms=([0-9.,]+)", open(path).read())
        return [float(x) for x in m.group(1).split(",")] if m else []
    except OSError:
        return []
def split(name):
    try:
        s = json.load(open(os.path.join(out, name + ".json")))["stats"]
    except (OSError, ValueError, KeyError):
        return None
    n = s.get("fast_alloc_calls") or 0
    if not n:
        return None
    return tuple(s.get(k, 0) / 1e6 / n for k in ("fast_alloc_map_ns", "fast_alloc_fault_ns", "fast_alloc_register_ns"))
print("| variant | 64 MiB ms | 1 GiB ms | map / fault / register ms per block (1 GiB) |")
print("|---|---:|---:|---|")
for v in ("plain", "default", "advice", "populate"):
    a = sum((alloc_ms(os.path.join(out, f"alloc.64M.{v}.{r}.out")) for r in range(1, rounds + 1)), [])
    b = sum((alloc_ms(os.path.join(out, f"alloc.1G.{v}.{r}.out")) for r in range(1, rounds + 1)), [])
    sp = [split(f"alloc.1G.{v}.{r}") for r in range(1, rounds + 1)]
    sp = [x for x in sp if x]
    s = " / ".join("%.2f" % med([x[i] for x in sp]) for i in range(3)) if sp else "-"
    print(f"| {v} | {med(a):.2f} | {med(b):.2f} | {s} |")
print()
print("| varsize variant | seconds (median) | map / fault / register ms per block |")
print("|---|---:|---|")
for v in ("default", "advice", "syncunmap", "populate"):
    secs = []
    for r in range(1, rounds + 1):
        try:
            m = re.search(r"seconds=([0-9.]+)", open(os.path.join(out, f"varsize.{v}.{r}.out")).read())
            if m:
                secs.append(float(m.group(1)))
        except OSError:
            pass
    sp = [x for x in (split(f"varsize.{v}.{r}") for r in range(1, rounds + 1)) if x]
    s = " / ".join("%.3f" % med([x[i] for x in sp]) for i in range(3)) if sp else "-"
    print(f"| {v} | {med(secs):.2f} | {s} |")
PY
echo
echo "Wall time: $(($(date +%s) - t0)) s. Runs and reports: $out"
