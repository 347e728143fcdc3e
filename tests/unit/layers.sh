#!/bin/sh
# layers.sh - the architecture of src/ as a test (TAP).  The layers, lowest
# first (src/README.md):
#
#   0 util      options, statistics, log, emitter, output files, state
#   1 real      the real runtime and driver functions
#   2 core      pool, registry, cache, memory classifier, fences
#   2 report    the report at exit (reads statistics only)
#   3 stage     pinned rings and copy threads
#   3 diag      call accounting, observe mode, CUPTI, timeline, trace
#   4 api       the policy of each interposed family
#   5 intercept the exported symbols; init.c, the life cycle
#
#   1. every #include "..." in src/ names a file of the same or a lower layer;
#   2. every pc_* function or variable an object of the library uses is
#      defined in an object of the same or a lower layer (nm over the
#      objects of a build, so a hand-written declaration cannot hide a call
#      back up; skipped when no build is at hand);
#   3. no circle among src/'s files (a .c and its .h are one module), by
#      includes and by those uses, whichever layer.
#   4. no file of src/ over 500 lines.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
src=$top_srcdir/src
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pclayers.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

rank() {   # rank MODULE (a path under src/ without extension)
    case $1 in
    util/*) echo 0 ;; real/*) echo 1 ;; core/*|report/*) echo 2 ;;
    stage/*|diag/*) echo 3 ;; api/*) echo 4 ;; intercept/*|init) echo 5 ;;
    *) echo 9 ;;
    esac
}
module() {   # module PATH: util/log.c -> util/log; .def files are their own
    echo "$1" | sed -e 's|^\./||' -e 's|\.[ch]$||'
}

# Edges "from to" between modules.
(cd "$src" && find . \( -name '*.[ch]' -o -name '*.def' \) ! -path './cli/*' | sort) |
while read -r f; do
    f=${f#./}
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$src/$f" |
    while read -r inc; do
        [ "$inc" = config.h ] && continue
        echo "$(module "$f") $(module "$inc") $f"
    done
done >"$tmp/inc"

echo "1..4"

# 1. includes
bad=
while read -r from to f; do
    [ "$from" = "$to" ] && continue
    case $to in *.def) to=${to%/*}/x ;; esac
    if [ "$(rank "$to")" = 9 ] || [ "$(rank "$from")" -lt "$(rank "$to")" ]; then
        bad="$bad#   $f includes $to (layer $(rank "$from") -> $(rank "$to"))
"
    fi
done <"$tmp/inc"
if [ -z "$bad" ]; then echo "ok 1 - every include goes to the same or a lower layer"
else echo "not ok 1 - includes that run back up a layer"; printf '%s' "$bad"; fi

# 2. uses, from the objects of a build
# (the library's own objects and those of src/libpccommon.la, linked into it)
objs=$(find "$top_builddir/src" -path '*/.libs/*' \( -name 'libpincache_la-*.o' -o -name 'libpccommon_la-*.o' \) \
    2>/dev/null | sort)
: >"$tmp/use"
if [ -z "$objs" ] || ! command -v nm >/dev/null 2>&1; then
    echo "ok 2 - # SKIP no objects of the library under $top_builddir/src"
else
    for o in $objs; do
        d=${o%/.libs/*}; d=${d#"$top_builddir/src"}; d=${d#/}
        b=${o##*/.libs/}; b=${b#libpincache_la-}; b=${b#libpccommon_la-}; b=${b%.o}
        m=${d:+$d/}$b
        # an object left over from a file since moved or removed is not the library's
        [ -f "$src/$m.c" ] || continue
        nm "$o" | awk -v m="$m" '$2 ~ /^[TDBRVW]$/ && $3 ~ /^pc/ { print "def", m, $3 }
                                  $1 == "U" && $2 ~ /^pc/ { print "use", m, $2 }'
    done >"$tmp/syms"
    awk '$1 == "def" { def[$3] = $2 } $1 == "use" { u[n++] = $2 " " $3 }
         END { for (i = 0; i < n; i++) { split(u[i], a, " "); if (a[2] in def) print a[1], def[a[2]], a[2] } }' \
        "$tmp/syms" >"$tmp/use"
    bad=
    while read -r from to sym; do
        if [ "$(rank "$from")" -lt "$(rank "$to")" ]; then
            bad="$bad#   $from uses $sym of $to (layer $(rank "$from") -> $(rank "$to"))
"
        fi
    done <"$tmp/use"
    if [ -z "$bad" ]; then echo "ok 2 - every function and variable used comes from the same or a lower layer"
    else echo "not ok 2 - uses that run back up a layer"; printf '%s' "$bad"; fi
fi

# 3. circles, over includes and uses together
{ awk '$1 != $2 && $2 !~ /[.]def$/ { print $1, $2 }' "$tmp/inc"
  awk '$1 != $2 { print $1, $2 }' "$tmp/use"; } | sort -u >"$tmp/edges"
if tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
    echo "ok 3 - no circle among the files of src/"
else
    echo "not ok 3 - files of src/ that depend on each other in a circle"
    grep -v 'input contains a loop' "$tmp/loop" | sed 's/^tsort: /#   /'
fi

# 4. size
bad=$(cd "$src" && find . -name '*.[ch]' ! -path './cli/*' -exec wc -l {} + |
      awk '$2 != "total" && $1 > 500 { printf "#   %s: %d lines\n", substr($2, 3), $1 }')
if [ -z "$bad" ]; then echo "ok 4 - no file of src/ over 500 lines"
else echo "not ok 4 - files of src/ over 500 lines"; echo "$bad"; fi
