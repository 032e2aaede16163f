#!/bin/sh
# s28_call8.sh (session 28): why o_proj's early blocks slow attention's tiles (call 7: tiles 5.17
# us under ATT_TRIG=2, 3.72 under 3, where o_proj launches after them; with o_proj's ring twice
# as deep 7.2). GLIM_CUDA_DIAG_ATT_TWICE=1 runs the tiles a second time, warm: if the second
# pass costs the same under 2 and 3, the ring's bytes slow the cold first pass (its instruction
# fetches through L2, session 26's IMC misses), not the tiles' own loads or math. 2 rounds.
cd "$(dirname "$0")/../.." || exit 1
set --
for r in 1 2; do set -- "$@" new new,GLIM_CUDA_DIAG_ATT_TWICE=1 new,GLIM_CUDA_ATT_TRIG=3 new,GLIM_CUDA_ATT_TRIG=3,GLIM_CUDA_DIAG_ATT_TWICE=1 new,GLIM_CUDA_SPAN_TWO=11,GLIM_CUDA_DIAG_ATT_TWICE=1; done
sh bench/ab_decode.sh "$@" 2>&1 | grep -v '^new\|^old'
grep -E "^decode with|^\| (attention \(sliding\)|attention \(full\)|o_proj) " $OUT/e.md | awk -F'|' '/^decode/{n=0; d=$0; next} {n++; if (n<=3) printf "%s %s step %s first %s loop(w/p/l) %s\n", d, $2, $4, $5, $10}'
