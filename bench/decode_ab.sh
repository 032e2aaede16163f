#!/bin/sh
# decode_ab.sh (on the GPU machine, after a build): decode tok/s of several variants, alternating
# processes, without the timeline, at contexts 0, 4k and 32k (64 tokens each), ROUNDS rounds. A
# variant is `new` (this tree, with $NEW_ENV), `old` (an earlier commit's binary,
# build/old_glimmer.xz from scripts/old_binary.sh), `old,` followed by settings for that binary
# (e.g. old,GLIM_CUDA_DIAG_RING=4), `alt` / `alt,`... the same for a third binary
# (build/alt_glimmer.xz: scripts/old_binary.sh REV alt), or settings for this tree,
# NAME=VALUE joined by commas (e.g. GLIM_CUDA_ATT_HEADS=8,GLIM_CUDA_ATT_GROUP=1024). Only figures from one call on
# one machine compare: the same tree differs by ~1.5 % between machines. Writes $OUT/ab.md and
# prints per variant the mean and every round's figures. CTX (e.g. 0,4096,8192,16384,32768): the
# contexts instead (glimmer bench --ctx).
# Usage: [CTX=LIST] bench/decode_ab.sh ROUNDS VARIANT...
[ $# -ge 2 ] || { echo "usage: $0 ROUNDS VARIANT..." >&2; exit 2; }
rounds=$1
shift
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
for b in old alt; do
    for v in "$@"; do
        case $v in "$b" | "$b",*) ;; *) continue ;; esac
        xz -dc build/${b}_glimmer.xz > build/${b}_glimmer && chmod +x build/${b}_glimmer || exit 1
        export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        build/${b}_glimmer --help > /dev/null 2>&1 ||
            { echo "decode_ab: the $b binary does not start:"; build/${b}_glimmer --help 2>&1 | head -3; exit 1; }
        break # (once for all the variants of this binary)
    done
done
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1 # warm-up
: > "$OUT/ab.md"
r=0
while [ $r -lt "$rounds" ]; do
    r=$((r + 1))
    for v in "$@"; do
        echo "run $v" >> "$OUT/ab.md"
        case $v in
        old | old,*) bin=build/old_glimmer set=${v#old} ;;
        alt | alt,*) bin=build/alt_glimmer set=${v#alt} ;;
        new) bin=build/glimmer set=$NEW_ENV ;;
        *) bin=build/glimmer set=$v ;;
        esac
        cmd="env $(echo "$set" | tr ',' ' ') $bin"
        timeout 100 $cmd bench --synthetic --prompt 0 -n 64 ${CTX:+--ctx $CTX} --out "$OUT/ab.md" > /dev/null 2>&1 ||
            echo "decode_ab: $v: rc $?"
    done
done
# the contexts a run: the most decode rows any run wrote (the bench's default or CTX's)
awk '/^run /{v=$2; r=0; if (!(v in seen)) {seen[v]=1; order[++nv]=v}}
     /^\| decode/{split($0,f,"|"); x[v]=x[v] sprintf(" %6.1f", f[3]); t[v,++n[v]]=f[3]; if (++r > nc) nc=r}
     END{for (j=1; j<=nv; j++) {v=order[j]; k=int(n[v]/nc); if (!k) continue; m="";
         for (c=0; c<nc; c++) {s=0; for (i=1+c; i<=k*nc; i+=nc) s+=t[v,i]; m=m (c ? " / " : "") sprintf("%.1f", s/k)}
         printf "%s: %s tok/s (%d rounds):%s\n", v, m, k, x[v]}}' "$OUT/ab.md"
# a run whose last logits were not all finite timed NaN paths (glimmer bench's warning line)
nw=$(grep -c '^warning' "$OUT/ab.md")
[ "$nw" -eq 0 ] || echo "decode_ab: $nw runs warned of non-finite logits (see $OUT/ab.md)"
