#!/bin/sh
# cli: pincache report renders exactly what the program printed, and reads
# a report back without loss (report --json gives the same document); merge
# of two ranks adds every counter, byte count, time and histogram bucket
# (max_ns: the larger), and its table has one row per rank and the totals;
# run --trace writes a trace; run keeps an existing LD_PRELOAD, puts the
# library there absolute, and refuses (status 2, nothing run) a library path
# with a space, which the loader would split; --help and --version work.
. "$top_srcdir/tests/diag/common.sh"
diag_need
cli=${PINCACHE_CLI:-$top_builddir/scripts/pincache}
if [ ! -x "$PINCACHE_JSON_TOOL" ]; then
	echo "1..0 # SKIP pincache-json not built (needs jansson)"
	exit 0
fi

# Two ranks doing different amounts; the summary also on stderr (PINCACHE_LOG=info).
for r in 0 1; do
	RANK=$r PINCACHE_LOG=info PINCACHE_STAGE=off PINCACHE_REPORT=$SIM_TMP/rank%r.json \
		run_prog shim "$DIAG_BIN/scenario" counts cache $((r + 1)) >/dev/null 2>"$SIM_TMP/err$r"
	tap_check $? "rank $r: the scenario ran"
done

"$cli" report --json "$SIM_TMP/rank0.json" >"$SIM_TMP/again.json"
tap_check $? "report --json: exit status 0"
"$DIAG_BIN/jcheck" same "$SIM_TMP/rank0.json" "$SIM_TMP/again.json"
tap_check $? "report --json: the same document as the library wrote (nothing lost reading it)"

"$cli" report "$SIM_TMP/rank1.json" >"$SIM_TMP/text1"
tap_check $? "report: exit status 0"
grep '^pincache\[' "$SIM_TMP/err1" | grep -v ': \(info\|warning\|debug\):' >"$SIM_TMP/printed1"
if cmp -s "$SIM_TMP/text1" "$SIM_TMP/printed1" && [ -s "$SIM_TMP/text1" ]; then
	tap_check 0 "report: the same summary the program printed at exit"
else
	tap_check 1 "report: the same summary the program printed at exit"
	diff "$SIM_TMP/printed1" "$SIM_TMP/text1" | sed 's/^/# /'
fi

"$cli" merge --json "$SIM_TMP/rank0.json" "$SIM_TMP/rank1.json" >"$SIM_TMP/merged.json"
tap_check $? "merge --json: exit status 0"
tap_program "merge" plain "$DIAG_BIN/jcheck" merge "$SIM_TMP/merged.json" "$SIM_TMP/rank0.json" "$SIM_TMP/rank1.json"
a0=$(jget "$SIM_TMP/rank0.json" apis.cudaHostAlloc.calls)
a1=$(jget "$SIM_TMP/rank1.json" apis.cudaHostAlloc.calls)
[ "$a0" -gt 0 ] && [ "$a1" -gt "$a0" ]
tap_check $? "the ranks did different amounts ($a0, $a1 cudaHostAlloc calls)"

"$cli" merge "$SIM_TMP/rank0.json" "$SIM_TMP/rank1.json" >"$SIM_TMP/table"
tap_check $? "merge: exit status 0"
sed 's/^/# /' "$SIM_TMP/table" | head -n 8
allocs0=$(jget "$SIM_TMP/rank0.json" stats.alloc_calls)
allocs1=$(jget "$SIM_TMP/rank1.json" stats.alloc_calls)
tap_eq "$(awk '$1 == "0" { print $4 }' "$SIM_TMP/table")" "$allocs0" "merge table: rank 0's row"
tap_eq "$(awk '$1 == "1" { print $4 }' "$SIM_TMP/table")" "$allocs1" "merge table: rank 1's row"
tap_eq "$(awk '$1 == "total" { print $5 }' "$SIM_TMP/table")" $((allocs0 + allocs1)) "merge table: the total row adds them"
s0=$(jget "$SIM_TMP/rank0.json" stats.syncs_avoided)
s1=$(jget "$SIM_TMP/rank1.json" stats.syncs_avoided)
tap_eq "$(awk '$1 == "total" { print $9 }' "$SIM_TMP/table")" $((s0 + s1)) "merge table: syncs avoided add up"
grep -q "cudaFreeHost: .* calls; $((s0 + s1)) would have synchronized" "$SIM_TMP/table"
tap_check $? "merge: the summary of the totals follows"

"$cli" report "$SIM_TMP/table" >/dev/null 2>&1
[ $? -ne 0 ]
tap_check $? "report: a file that is not JSON fails"
echo '{"schema_version": 3}' >"$SIM_TMP/notreport.json"
"$cli" report "$SIM_TMP/notreport.json" >/dev/null 2>&1
[ $? -ne 0 ]
tap_check $? "report: JSON that is not a report fails"

PINCACHE_LIB=$PINCACHE_LIB "$cli" run --trace "$SIM_TMP/run-%p.trace.json" --report "$SIM_TMP/run.json" -- \
	"$DIAG_BIN/scenario" threads 1 10 >/dev/null 2>&1
tap_check $? "run --trace --report: exit status 0"
t=$(ls "$SIM_TMP" | grep '^run-.*trace.json$' | head -n 1)
"$DIAG_BIN/jcheck" trace "$SIM_TMP/$t" >"$SIM_TMP/facts" 2>&1
tap_check $? "run --trace: the trace is written and valid"
tap_eq "$(sed -n 's/^events //p' "$SIM_TMP/facts")" 30 "run --trace: the program's 30 calls in it"

# LD_PRELOAD: kept, extended with the library's absolute path.
d=$SIM_TMP/plain
mkdir "$d"
cp "$PINCACHE_LIB" "$d/libpincache.so"
pre=$(san_runtime "$DIAG_BIN/scenario")     # a sanitizer's runtime must come first
pre=${pre:-libm.so.6}
got=$(cd "$d" && LD_PRELOAD=$pre PINCACHE_LIB=libpincache.so "$cli" run -- sh -c 'echo "$LD_PRELOAD"')
tap_eq "$got" "$pre:$(cd -P "$d" && pwd -P)/libpincache.so" "run: an existing LD_PRELOAD is kept, the library added absolute"

# A library path with a space (issue 15, D8): refused, never run without it.
d="$SIM_TMP/build dir"
mkdir "$d"
cp "$PINCACHE_LIB" "$d/libpincache.so"
PINCACHE_LIB="$d/libpincache.so" "$cli" run --report "$SIM_TMP/space.json" -- \
	sh -c 'echo ran' >"$SIM_TMP/space.out" 2>"$SIM_TMP/space.err"
rc=$?
sed 's/^/# stderr: /' "$SIM_TMP/space.err"
tap_eq "$rc" 2 "run, a library path with a space: exit status 2"
tap_eq "$(cat "$SIM_TMP/space.out")" "" "run, a library path with a space: the program is not run without the library"
grep -q "^pincache: cannot preload '$d/libpincache.so'" "$SIM_TMP/space.err"
tap_check $? "run, a library path with a space: stderr says why"
# ... unless the space is only in a linked folder's name: the real path is used.
ln -s "$SIM_TMP/plain" "$SIM_TMP/link dir"
PINCACHE_LIB="$SIM_TMP/link dir/libpincache.so" PINCACHE_STAGE=off PINCACHE_REPORT="$SIM_TMP/linked.json" \
	"$cli" run -- "$DIAG_BIN/scenario" threads 1 4 >/dev/null 2>&1
tap_check $? "run, a space only in a linked folder: exit status 0"
[ "$(jget "$SIM_TMP/linked.json" apis.cudaHostAlloc.calls)" = 4 ]
tap_check $? "run, a space only in a linked folder: the library ran (its report counts 4 allocations)"

"$cli" --help >"$SIM_TMP/help" 2>&1
tap_check $? "--help: exit status 0"
grep -q -- '--trace FILE' "$SIM_TMP/help"
tap_check $? "--help: documents --trace"
grep -q 'merge' "$SIM_TMP/help"
tap_check $? "--help: documents merge"
"$cli" --version | grep -q '^pincache [0-9]'
tap_check $? "--version: pincache VERSION"
"$cli" run --trace >/dev/null 2>&1
[ $? -eq 2 ]
tap_check $? "run --trace without a FILE: usage error"
tap_done
