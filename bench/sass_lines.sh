#!/bin/sh
# sass_lines.sh: the line-annotated SASS listing (nvdisasm -g) of every kernel whose mangled name
# matches a pattern, from the build's objects, for bench/sass_profile.py --lines (which maps an
# ncu profile's instruction indices to source lines). Needs cuobjdump and nvdisasm (the CUDA
# toolkit on the GPU machine; not in Debian's nvcc here). Run after a build (-lineinfo).
# Usage: bench/sass_lines.sh OUTDIR OBJECT PATTERN, e.g.
#   bench/sass_lines.sh $OUT/lines build/src/cuda/decode_mv_span.o 'k_dmv_span.*Lb1ELi4EE'
# writes OUTDIR/<kernel's mangled name>.sass per match.
set -e
[ $# -eq 3 ] || { echo "usage: $0 OUTDIR OBJECT PATTERN" >&2; exit 2; }
out=$1 obj=$(readlink -f "$2") pat=$3
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && cuobjdump -xelf all "$obj" > /dev/null)
for cubin in "$tmp"/*.cubin; do
    # -gi: inlined code under its own source line (-g alone where this nvdisasm lacks it)
    nvdisasm -gi -c "$cubin" > "$tmp/all.sass" 2>/dev/null || nvdisasm -g -c "$cubin" > "$tmp/all.sass"
    # one file per function: a listing's functions start at their ".text.NAME:" label
    awk -v out="$out" -v pat="$pat" '
        /^[ \t]*\.text\.[^ \t:]+:/ { name = $1; sub(/^\.text\./, "", name); sub(/:$/, "", name);
                                     f = (name ~ pat) ? out "/" name ".sass" : ""; next }
        f != "" { print > f }' "$tmp/all.sass"
done
n=$(ls "$out" | grep -c . || true)
[ "$n" -gt 0 ] || { echo "sass_lines: no kernel matching '$pat' in $obj" >&2; exit 1; }
echo "sass_lines: $n listing(s) in $out"
