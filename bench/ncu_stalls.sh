#!/bin/sh
# ncu_stalls.sh: where the warps of one decode kernel wait, instruction by instruction. Profiles
# one launch each of the decode matvec (qkvg with its RESID prologue, layer 1; o_proj, RAW) and
# of attention in a 2-layer synthetic decode, and writes per kernel: the stall-reason totals
# (raw page) and the SASS with per-instruction warp-stall samples (source page, CSV) to $OUT.
# Run after a build (bench/gpu_check.sh builds). Usage: bench/ncu_stalls.sh
# Per target NAME: NAME.log, NAME_raw.csv, NAME_sass.csv, NAME_cuda.csv, NAME_details.txt and
# NAME_profile.md (bench/sass_profile.py: instructions and stall samples by loop level, the
# instructions with most samples); NCU_TAR=1 packs them into $OUT/ncu_stalls.tgz.
# NCU_TARGETS="name kernel skip;..." picks other launches of the same bench: per context it
# decodes 4 warm-up + 4 timed tokens at 0, 4096 and 32768 keys, 2 attention launches per token
# (layer 0 sliding, layer 1 full), so e.g. "att32k_full k_attention 37" is the third token's
# full layer at 32k keys. NCU_BENCH replaces the bench's arguments (default "--synthetic --layers 2
# -n 4 --prompt 0"), e.g. "--synthetic --layers 2 -n 1 --prompt 64" for the prompt's kernels.
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
# k_dmv launches per token of the 2-layer model: qkvg o gate/up down (x2), head; skip 22 = the
# third token's layer-1 qkvg (RESID prologue), 23 its o_proj; attention: 2 per token.
IFS=';'
set -f
for k in ${NCU_TARGETS:-qkvg k_dmv 22;oproj k_dmv 23;attn k_attention 6}; do
    unset IFS
    set -- $k
    timeout 120 ncu --clock-control none --set full --import-source no --kernel-name regex:"$2" \
        --launch-skip "$3" --launch-count 1 -f -o "$OUT/$1" \
        build/glimmer bench ${NCU_BENCH:---synthetic --layers 2 -n 4 --prompt 0} >"$OUT/$1.log" 2>&1
    ncu -i "$OUT/$1.ncu-rep" --page raw --csv >"$OUT/$1_raw.csv" 2>&1
    ncu -i "$OUT/$1.ncu-rep" --page source --print-source sass --csv >"$OUT/$1_sass.csv" 2>&1
    ncu -i "$OUT/$1.ncu-rep" --page source --print-source cuda --csv >"$OUT/$1_cuda.csv" 2>&1
    ncu -i "$OUT/$1.ncu-rep" --page details --print-details all >"$OUT/$1_details.txt" 2>&1
    rm -f "$OUT/$1.ncu-rep"
    python3 bench/sass_profile.py "$OUT/$1_sass.csv" --skips 20 >"$OUT/$1_profile.md" 2>&1
    echo "$1: $(wc -l <"$OUT/$1_sass.csv") sass lines, $(grep -c . "$OUT/$1_details.txt") detail lines; $(head -1 "$OUT/$1_profile.md" | sed 's/^[^:]*: //')"
done
# NCU_TAR=1: everything above in one tarball, $OUT/ncu_stalls.tgz (the device tool brings back
# at most 8 files: four targets' 6 files each came back as only the first 8 in session 26)
if [ "${NCU_TAR:-0}" = 1 ]; then
    set +f
    (cd "$OUT" && tar czf ncu_stalls.tgz --remove-files *.log *_raw.csv *_sass.csv *_cuda.csv *_details.txt *_profile.md 2>/dev/null)
    echo "ncu outputs in $OUT/ncu_stalls.tgz"
fi
