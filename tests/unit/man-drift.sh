#!/bin/sh
# man-drift.sh - pincache(7) documents what the library does:
#   1. its ENVIRONMENT section names exactly the variables PINCACHE_HELP lists;
#   2. its REPORT FIELDS section names every key of the JSON report (taken
#      from the golden report, which test_report keeps equal to the output).
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}

page=
for d in "$top_builddir" "$top_srcdir"; do
    if [ -f "$d/man/pincache.7" ]; then page=$d/man/pincache.7; break; fi
done
help_prog=$top_builddir/tests/unit/print_options
golden=$top_srcdir/tests/unit/golden/report-cache.json
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pc_drift.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT

section() {   # the roff source between ".SH NAME" and the next .SH
    awk -v want="$1" '/^\.SH/ { sub(/^\.SH[ \t]+/, ""); gsub(/"/, ""); on = ($0 == want); next }
                      on' "$page"
}

echo "1..2"
if [ -z "$page" ]; then
    echo "not ok 1 - ENVIRONMENT lists the variables of PINCACHE_HELP # no pincache.7"
    echo "not ok 2 - REPORT FIELDS names every JSON key # no pincache.7"
    exit 0
fi

section ENVIRONMENT | grep -o 'PINCACHE_[A-Z0-9_][A-Z0-9_]*' | sort -u >"$tmp/man"
env -i PATH="$PATH" PINCACHE_HELP=1 "$help_prog" 2>&1 >/dev/null |
    grep -o 'PINCACHE_[A-Z0-9_][A-Z0-9_]*=' | tr -d = | sort -u >"$tmp/help"
if [ -s "$tmp/help" ] && cmp -s "$tmp/man" "$tmp/help"; then
    echo "ok 1 - ENVIRONMENT lists the $(wc -l <"$tmp/help" | tr -d ' ') variables of PINCACHE_HELP"
else
    echo "not ok 1 - ENVIRONMENT lists the variables of PINCACHE_HELP"
    echo "# < only in pincache(7), > only in PINCACHE_HELP:"
    diff "$tmp/man" "$tmp/help" | grep '^[<>]' | sed 's/^/#   /'
fi

section "REPORT FIELDS" >"$tmp/fields"
grep -o '"[A-Za-z0-9_]*":' "$golden" | tr -d '":' | sort -u >"$tmp/keys"
missing=
for k in $(cat "$tmp/keys"); do
    grep -qw -- "$k" "$tmp/fields" || missing="$missing $k"
done
if [ -s "$tmp/keys" ] && [ -z "$missing" ]; then
    echo "ok 2 - REPORT FIELDS names all $(wc -l <"$tmp/keys" | tr -d ' ') keys of the JSON report"
else
    echo "not ok 2 - REPORT FIELDS names every key of the JSON report"
    echo "# missing:$missing"
fi
