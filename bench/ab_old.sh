#!/bin/sh
# ab_old.sh (on the GPU machine, after a build): this tree's decode (with $NEW_ENV) against an
# earlier commit's binary (build/old_glimmer.xz, made by scripts/old_binary.sh), ROUNDS rounds
# (default 4): bench/decode_ab.sh's variants `new` and `old`.
# Usage: bench/ab_old.sh [ROUNDS]
exec sh "$(dirname "$0")/decode_ab.sh" "${1:-4}" new old
