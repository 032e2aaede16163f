#!/bin/sh
# ab_lead.sh MIN_PCT (reads bench/decode_ab.sh's summary lines on stdin): the variant whose
# smaller lead over `new` at the first two contexts is the largest, printed only where that lead
# is above MIN_PCT percent; nothing otherwise. A call script's test for whether a sweep found a
# setting worth confirming in the same call.
awk -v min="$1" '
/^[^ ]+: [0-9.]+( \/ [0-9.]+)* tok\/s/ {
    v = $1; sub(/:$/, "", v)
    a[v] = $2; b[v] = ($3 == "/") ? $4 : $2; order[++n] = v
}
END {
    if (!("new" in a) || a["new"] <= 0 || b["new"] <= 0) exit
    best = ""; lead = min
    for (i = 1; i <= n; i++) {
        v = order[i]; if (v == "new") continue
        g0 = 100 * (a[v] / a["new"] - 1); g1 = 100 * (b[v] / b["new"] - 1)
        g = g0 < g1 ? g0 : g1
        if (g > lead) { lead = g; best = v }
    }
    if (best != "") print best
}'
