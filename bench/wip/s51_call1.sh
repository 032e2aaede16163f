#!/bin/sh
# s51_call1.sh (session 51): the H200 run of record if the card is an H200 (s50_call2.sh:
# bench of record, no-bytes, A/B against 8522bed and the H200-sensitive switches, GPU tests,
# quick sanitizer); on any other card it prints the card's name and stops, so that an H100
# start costs only its start (the landed tree's H100 figures are session 50's call 2).
# Carry .deps, build/cuda_objs.tar.xz, build/old_glimmer.xz (8522bed).
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "card: $name"
case "$name" in
  *H200*) exec sh bench/wip/s50_call2.sh ;;
  *) echo "not an H200: stopping"; exit 0 ;;
esac
