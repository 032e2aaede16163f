#!/bin/sh
# old_binary.sh: builds the glimmer binary of an earlier commit for an A/B on the GPU machine
# (bench/ab_old.sh there), as build/old_glimmer.xz of this tree: about 8 MB, small enough to
# carry next to .deps and build/src/cuda (the device tool's carry is 64 MiB in all). Linked
# without the HTTP server, whose library and its dependencies the GPU machine lacks; the other
# libraries come from .deps there (LD_LIBRARY_PATH). A full build of the commit in a temporary
# worktree: ~10 minutes on 2 cores. NAME (default old) names the output build/NAME_glimmer.xz:
# `alt` is bench/decode_ab.sh's third binary (session 47's alt, built by `make` here with the
# server, did not start on the device: it lacked libmicrohttpd).
# Usage: scripts/old_binary.sh REV [NAME]   (then carry "build/NAME_glimmer.xz")
set -e
[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: $0 REV [NAME]" >&2; exit 2; }
name=${2:-old}
case $name in old | alt) ;; *) echo "$0: NAME is old or alt (bench/decode_ab.sh's binaries)" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short "$1")
wt=$(mktemp -d /tmp/glimmer-old-XXXXXX)
trap 'git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"' EXIT
git worktree add -q --detach "$wt" "$rev"
make -C "$wt" -j"$(nproc)" HAVE_MHD= build/glimmer > "$wt/build.log" 2>&1 || { tail -20 "$wt/build.log"; exit 1; }
mkdir -p build
xz -T0 -1 -c "$wt/build/glimmer" > "build/${name}_glimmer.xz"
echo "build/${name}_glimmer.xz: glimmer at $rev, $(wc -c < "build/${name}_glimmer.xz") bytes"
