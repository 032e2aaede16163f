#!/bin/sh
# ab_decode.sh: decode speed of two trees in one device call, in alternating processes (the
# pool's machines differ by 2-5 %, so a change is only measured against its parent on the same
# machine). "new" is this tree, "old" a second tree at build/oldtree, made here with
#   git worktree add build/oldtree <commit> && rm build/oldtree/.git && git worktree prune
# and carried with the device tool's `carry` next to .deps and build/src/cuda (this tree's CUDA
# objects, built here); the old tree is built on the device (~1 min) when an item uses it. A
# third tree at build/midtree (made the same way) is the item "mid", built likewise.
# Usage: OUT=dir bench/ab_decode.sh ITEM... where ITEM is old, mid or new, optionally followed by
# comma-separated settings (new,GLIM_CUDA_X=1). CHECKS="SETTINGS..." runs this tree's forward
# test under each first; KTESTS=1 its kernel and hooks tests. Each item appends a
# `glimmer bench --synthetic --prompt 0 --timeline -n 32` to $OUT/e.md and prints its tok/s.
# At the end: each item's means, its rounds (ctx 0 / 4k / 32k per process, in order: whether a
# lead holds round by round), and with STEPS="qkvg, attention (sliding), o_proj" (kernel names
# as the timeline writes them, comma-separated) those kernels' ctx-0 rows of each item's first
# process (step, first block start, block wait / prologue / loop).
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$PWD/ab_out}
mkdir -p "$OUT"
export OUT
scripts/device_build.sh --carried > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
# the other trees only where an item uses them (~1 min each)
for t in old mid; do
  case " $* " in *" $t "*|*" $t,"*) ;; *) continue ;; esac
  make -C build/${t}tree -j"$(nproc)" DEPS_PREFIX="$PWD/.deps/root" build/glimmer > $OUT/build_$t.log 2>&1 || { tail -20 $OUT/build_$t.log; exit 1; }
done
: > $OUT/checks.log
for e in ${CHECKS:-}; do
  echo "== forward with $e" >> $OUT/checks.log
  env $(echo $e | tr ',' ' ') GLIM_REQUIRE_CUDA=1 timeout 200 build/tests/test_cuda_forward >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log
done
if [ -n "${KTESTS:-}" ]; then for t in build/tests/test_cuda_kernels build/tests/test_cuda_hooks; do echo "== $t" >> $OUT/checks.log; GLIM_REQUIRE_CUDA=1 timeout 200 $t >> $OUT/checks.log 2>&1; echo "rc=$?" >> $OUT/checks.log; done; fi
[ -n "${CHECKS:-}${KTESTS:-}" ] && echo "checks: $(grep -c '^PASS' $OUT/checks.log) pass, $(grep -c '^FAIL' $OUT/checks.log) fail; rcs: $(grep rc= $OUT/checks.log | tr '\n' ' ')"
: > $OUT/e.md
timeout 60 build/glimmer bench --synthetic --prompt 0 -n 8 > /dev/null 2>&1
for v in "$@"; do
  which=${v%%,*}; envs=$(echo "$v" | sed -n 's/^[a-z]*,//p' | tr ',' ' ')
  bin=build/glimmer; [ "$which" = old ] && bin=build/oldtree/build/glimmer
  [ "$which" = mid ] && bin=build/midtree/build/glimmer
  printf '\ndecode with %s:\n\n' "$v" >> $OUT/e.md
  env $envs timeout 100 $bin bench --synthetic --prompt 0 --timeline -n 32 --out $OUT/e.md > $OUT/b.log 2>&1 || { echo "bench $v rc=$?"; tail -5 $OUT/b.log; }
  echo "$v: $(grep -E '^\| decode' $OUT/e.md | tail -3 | awk -F'|' '{printf "%s %s; ", $3, $7}')"
done
# The items' means, one line per distinct item (repeats averaged), ctx 0 / 4k / 32k tok/s, in
# the order the items first ran: the A/B's answer in one place; then each item's rounds
awk -F'|' '/^decode with /{v=$0; sub(/^decode with /, "", v); sub(/:$/, "", v); k=0; next}
  /^\| decode @ ctx/{k++; s[v, k] += $3; r[v] = r[v] sprintf(" %s", $3); if (k == 3) {n[v]++; r[v] = r[v] " |"}
                     if (!(v in seen)) {seen[v] = 1; order[++no] = v}}
  END {print "means:"; for (i = 1; i <= no; i++) {v = order[i]; if (!n[v]) continue;
       printf "  %s (%d): %.1f / %.1f / %.1f tok/s\n", v, n[v], s[v,1]/n[v], s[v,2]/n[v], s[v,3]/n[v]}
       print "rounds (ctx 0 / 4k / 32k | ...):"; for (i = 1; i <= no; i++) printf "  %s:%s\n", order[i], r[order[i]]}' $OUT/e.md
if [ -n "${STEPS:-}" ]; then
  echo "ctx-0 steps of each item's first process (us: step; first block start; wait / prologue / loop):"
  awk -F'|' -v want="${STEPS}" '
    BEGIN {n = split(want, w, / *, */)}
    /^decode with /{v=$0; sub(/^decode with /, "", v); sub(/:$/, "", v); t = (v in done) ? 0 : 1; done[v] = 1; tab = 0; next}
    /^timeline @ ctx/{tab++}
    t && tab == 1 && /^\| [a-z]/ {name = $2; gsub(/^ +| +$/, "", name);
      for (i = 1; i <= n; i++) if (name == w[i]) printf "  %s: %s: %s; %s; %s\n", v, name, $4, $5, $11}' $OUT/e.md
fi
