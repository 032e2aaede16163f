#!/bin/sh
# s28_call11.sh (session 28): confirm call 10 (GLIM_CUDA_SPAN_LATE=6 +0.2 / +0.5 / +0.5 %, 4
# rounds) with 5 more, and gate/up alone (4).
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2 3 4 5; do set -- "$@" new new,GLIM_CUDA_SPAN_LATE=6 new,GLIM_CUDA_SPAN_LATE=4; done
sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
awk -F'|' '/^decode with /{v=$0; next} /^\| decode @ ctx/{printf "%s %s\n", v, $3}' $OUT/e.md | awk '{k=$3; a[k]=a[k] " " $4} END{for (k in a) print k, a[k]}' | sort
