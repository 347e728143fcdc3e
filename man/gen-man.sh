#!/bin/sh
# gen-man.sh SRCDIR VERSION PAGE.in > PAGE
# Fill a man page template: @VERSION@, @SCHEMA_VERSION@, and the lines
# @ENVIRONMENT@, @REPORT_FIELDS@, @API_FIELDS@ and @COPY_FIELDS@ with what gen-man.c prints from
# options.def and stats.def.  Needs only sh, awk and a C compiler (CC,
# or CC_FOR_BUILD when cross-compiling); the dist tarball ships the pages.
set -eu
srcdir=$1
version=$2
in=$3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pincache-man.XXXXXX")
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
: >"$tmp/env"
: >"$tmp/stats"
: >"$tmp/apis"
: >"$tmp/copies"
schema=
if grep -q '@ENVIRONMENT@\|@REPORT_FIELDS@\|@API_FIELDS@\|@COPY_FIELDS@\|@SCHEMA_VERSION@' "$in"; then
    ${CC_FOR_BUILD:-${CC:-cc}} -I"$srcdir/src" -I"$srcdir/src/util" -o "$tmp/gen-man" "$srcdir/man/gen-man.c"
    "$tmp/gen-man" env >"$tmp/env"
    "$tmp/gen-man" stats >"$tmp/stats"
    "$tmp/gen-man" apis >"$tmp/apis"
    "$tmp/gen-man" copies >"$tmp/copies"
    schema=$("$tmp/gen-man" schema)
fi
awk -v envf="$tmp/env" -v statsf="$tmp/stats" -v apisf="$tmp/apis" -v copiesf="$tmp/copies" \
    -v version="$version" -v schema="$schema" '
    $0 == "@ENVIRONMENT@"   { while ((getline l < envf) > 0) print l; next }
    $0 == "@REPORT_FIELDS@" { while ((getline l < statsf) > 0) print l; next }
    $0 == "@API_FIELDS@"    { while ((getline l < apisf) > 0) print l; next }
    $0 == "@COPY_FIELDS@"   { while ((getline l < copiesf) > 0) print l; next }
    { gsub(/@VERSION@/, version); gsub(/@SCHEMA_VERSION@/, schema); print }
' "$in"
