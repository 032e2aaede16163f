# h200_only.sh (sourced by an H200-only call script, on the GPU machine, from the repository
# root, before bench/call_setup.sh): on any card but an H200, says so and ends the call at once,
# before the build, so that an H100 lent for an H200 request costs only its start.
# Usage: cd "$(dirname "$0")/../.." && . bench/h200_only.sh && . bench/call_setup.sh
card=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$card" in
*H200*) ;;
*) echo "$card: not an H200, nothing run"; exit 0 ;;
esac
