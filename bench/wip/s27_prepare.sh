#!/bin/sh
# s27_prepare.sh (session 26): makes, here, what s27_call1.sh needs: build/oldtree (main),
# build/midtree (main + chunk_ilp.patch), this tree with both patches applied and built. Run from
# a clean main; undo with `git checkout src tests bench/gpu_check.sh` (the patches are only
# applied, not committed).
set -e
cd "$(dirname "$0")/../.."
[ -z "$(git status --porcelain src tests)" ] || { echo "src or tests have changes: start from a clean main" >&2; exit 1; }
for t in old mid; do
    rm -rf build/${t}tree
    git worktree add -q build/${t}tree HEAD
    rm build/${t}tree/.git
    rm -rf build/${t}tree/tests/vectors build/${t}tree/bench/runs
done
git worktree prune
(cd build/midtree && patch -s -p1 < ../../bench/wip/chunk_ilp.patch)
git apply bench/wip/chunk_ilp.patch bench/wip/att_short.patch
make -j"$(nproc)" all >/dev/null
du -sh .deps build/src/cuda build/oldtree build/midtree
echo 'now: run with carry [".deps", "build/src/cuda", "build/oldtree", "build/midtree"]: OUT=$OUT sh bench/wip/s27_call1.sh'
