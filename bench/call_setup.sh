# call_setup.sh (sourced by a device call's script, on the GPU machine, from the repository root):
# the preamble every call runs: the start time (t0), the GPU's name (gpu, printed), the build
# from the carried objects (scripts/device_build.sh --carried, its log in $OUT/build.log; the
# script exits on a failed build), and the carried libraries' path. Session 49's first call
# script (s49_call1.sh) spells it out; s49_call2.sh on source this.
# Usage: cd "$(dirname "$0")/../.." && . bench/call_setup.sh
t0=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$gpu"
scripts/device_build.sh --carried > "$OUT/build.log" 2>&1 || { tail -20 "$OUT/build.log"; exit 1; }
export LD_LIBRARY_PATH=$PWD/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
