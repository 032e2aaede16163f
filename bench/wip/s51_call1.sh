#!/bin/sh
# s51_call1.sh (session 51): on an H200, the run of record first (s50_call2.sh: bench of record,
# no-bytes, A/B against 8522bed and the H200-sensitive switches, GPU tests, quick sanitizer);
# on any card, then, decode attention's run-time plan re-swept at 4k keys, where the token loses
# ~3 points of the floor against ctx 0 (v53) and the merge has changed since the last sweep
# (session 35, v37): full layers at 4k in two head groups (ATT_GROUP 4096), sliding layers at
# 2048 keys in four (ATT_GROUP_HALF 2048), both, fewer mergers (PMERGE 8, 4), splits of at
# least two tiles (ATT_CHUNK 128). The landed tree's H100 figures are session 50's call 2.
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (8522bed).
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "card: $name"
case "$name" in
  *H200*) sh bench/wip/s50_call2.sh ;;
  *) . bench/call_setup.sh ;;
esac
[ -f "$OUT/ab.md" ] && mv "$OUT/ab.md" "$OUT/record_ab.md"
t1=$(date +%s)
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
A=GLIM_CUDA_ATT
sh bench/decode_ab.sh ${SWEEP_ROUNDS:-3} new ${A}_GROUP=4096 ${A}_GROUP_HALF=2048 \
    ${A}_GROUP=4096,${A}_GROUP_HALF=4096 ${A}_PMERGE=8 ${A}_PMERGE=4 ${A}_CHUNK=128 2>&1 | tail -8
cp "$OUT/ab.md" "$OUT/att_sweep_ab.md"
echo "sweep took $(( $(date +%s) - t1 )) s"
