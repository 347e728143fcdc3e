#!/bin/sh
# man-lint.sh - pincache(1) and pincache(7) are built, fully generated, and
# render with groff without a single warning (-ww turns all of them on).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}

page() {   # the built page: in the build tree, or shipped in the source tree
    for d in "$top_builddir" "$top_srcdir"; do
        if [ -f "$d/man/$1" ]; then echo "$d/man/$1"; return; fi
    done
}

if ! command -v groff >/dev/null 2>&1; then
    echo "1..0 # SKIP groff is not installed"
    exit 0
fi
echo "1..6"
n=0
for p in pincache.1 pincache.7; do
    f=$(page "$p")
    n=$((n + 1))
    if [ -n "$f" ]; then echo "ok $n - $p is built"; else echo "not ok $n - $p is built"; fi
    n=$((n + 1))
    left=$( [ -n "$f" ] && grep -n '@[A-Z_]*@' "$f")
    if [ -n "$f" ] && [ -z "$left" ]; then
        echo "ok $n - $p has no template placeholder left"
    else
        echo "not ok $n - $p has no template placeholder left"
        printf '%s\n' "$left" | sed 's/^/# /'
    fi
    n=$((n + 1))
    warn=$( [ -n "$f" ] && LC_ALL=C groff -man -Tutf8 -ww -z "$f" 2>&1)
    if [ -n "$f" ] && [ -z "$warn" ]; then
        echo "ok $n - $p renders without warnings"
    else
        echo "not ok $n - $p renders without warnings"
        printf '%s\n' "$warn" | sed 's/^/# /'
    fi
done
