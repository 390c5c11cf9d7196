#!/bin/bash
# qglu (issue 23): one-token (T=1) quantized products at 2 rows per group
# (RIGSCOPE_CUDA_MQV variants; the default build behaves as main). Run from
# the repo root on the GPU machine; writes under $OUT; about 2 min.
#   new  = carry/qglu/k.cubin.xz, cc.test = carry/qglu/cc.test.xz
#   variants (quant_layout.go mqvEntries; suffix r2b = 2 rows BOTTOM,
#   r2 = 2 rows old loading, r1b/r4b = 1/4 rows BOTTOM):
#     glu2 (mqg_q4k_1r2b) glu2nb (r2) glu1 (r1b) glu4b (r4b: s16's slower one)
#     q4r2 (mq/mqn_q4k_1r2b) q6r2 (mq/mqn_q6k_1r2b) q6glu2 (mqg_q6k_1r2b)
#     q6glu1 (mqg_q6k_1r1b) q80r2 (mq/mqn/mqg_q80_1r2b) q80r2nb (r2)
#     q80ks2 (Q8_0 ks 2 where mqSplit picks 4, every T)
#   a. -checks quant -parts kernels at default and 4 settings that cover
#      every variant kernel (T=1 rows must equal the T=k default rows
#      bitwise, and float64 within tolerance)
#   b. the bandwidth table Q4_K,Q6_K,Q8_0 with -bwmqv: each T=1 product
#      under each setting that changes it, alternating with base, 2 rounds
#      in the process; the process run twice (so 4 rounds in all)
#   c. time left: main's /tmp/base.cubin table once (its T=1 should match
#      "base" above: the default kernels are unchanged, PTX compared).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
D=carry/qglu
xz -dc $D/cc.test.xz > /tmp/qglu_cc && chmod +x /tmp/qglu_cc
xz -dc $D/k.cubin.xz > /tmp/qglu.cubin
T00=$(date +%s); BUDGET=175
run() { # name cubin timeout mqv args...; the timeout is cut to what the budget has left
  local n=$1 c=$2 s=$3 v=$4; shift 4; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 10 ] && { echo "$n skipped (budget)" | tee -a "$O/summary.txt"; return; }
  RIGSCOPE_CUDA_MQV=$v RIGSCOPE_CUDA_PTX=$c timeout "$s" /tmp/qglu_cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1
  local r=$?; echo "exit status $r" >> "$O/$n.txt"
  echo "$n exit $r in $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
}
K="-checks quant -parts kernels"
run k_default /tmp/qglu.cubin 30 "" $K
run k_r2b /tmp/qglu.cubin 30 "glu2,q4r2,q6r2,q6glu2,q80r2" $K
run k_r2 /tmp/qglu.cubin 30 "glu2nb,q80r2nb" $K
run k_r1b /tmp/qglu.cubin 30 "glu1,q6glu1" $K
run k_r4b /tmp/qglu.cubin 30 "glu4b" $K
SETS="glu2;glu2nb;glu1;glu4b;q4r2;q6r2;q6glu2;q6glu1;glu2,q4r2,q6r2,q6glu2;q80r2;q80r2nb;q80ks2;q80r2,q80ks2"
BW="-checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K,Q8_0 -bwmma=false -bwsweep=false"
run bw1 /tmp/qglu.cubin 50 "" $BW "-bwmqv=$SETS"
run bw2 /tmp/qglu.cubin 50 "" $BW "-bwmqv=$SETS"
[ -f /tmp/base.cubin ] && run bw_main /tmp/base.cubin 40 "" $BW

echo "== a. kernels check (T=k = T=1 bitwise, float64 tol) per RIGSCOPE_CUDA_MQV"
for n in k_default k_r2b k_r2 k_r1b k_r4b; do f="$O/$n.txt"; [ -f "$f" ] || continue
  echo "-- $n [$(grep -o 'RIGSCOPE_CUDA_MQV [^)]*' "$f" | head -1)]: $(grep -cE ' ok ok | ok$|= cpu ok' "$f") ok lines, $(grep -cE 'FAIL' "$f") FAIL; $(grep -E '^--- (PASS|FAIL)' "$f")"
  grep -E '^(Q[0-9]|Q4_K\+)' "$f" | grep -vE ' ok ok | ok$|= cpu ok|\(T=5\) ok' | head -6
done
for n in k_r2b k_r2 k_r1b k_r4b; do [ -f "$O/$n.txt" ] && echo "-- exact-rel table $n vs default: $(diff <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/k_default.txt") <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/$n.txt") > /dev/null && echo identical || echo DIFFERENT)"; done
echo
echo "== b. T=1 us per setting, 4 rounds (2 in bw1, 2 in bw2, each alternating base and the settings): plain r1..r4 = mean (vs base), pdl mean (vs base); kernel/blocks/ks"
for n in bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue; sed -n '/^one-token variants/,/^$/p' "$f" | grep ' | '; done | awk -F' [|] ' '
  { sh = $1; st = $2; sub(/ +$/, "", st); k = sh SUBSEP st
    if (!(k in seen)) { seen[k] = 1; ord[++n] = k; shp[n] = sh; stp[n] = st; plan[n] = $5 }
    split($3, a, " "); split($4, b, " "); P[k] = P[k] sprintf(" %5.1f %5.1f", a[1], a[2]); sp[k] += a[1] + a[2]; sd[k] += b[1] + b[2]; c[k] += 2
    if (st ~ /^base/) base[sh] = k }
  END { for (i = 1; i <= n; i++) { k = ord[i]; bk = base[shp[i]]; if (i > 1 && shp[i] != shp[i-1]) print ""
      mp = sp[k] / c[k]; md = sd[k] / c[k]; bp = sp[bk] / c[bk]; bd = sd[bk] / c[bk]
      printf "%s%-21s%s = %5.1f (%+5.1f%%) pdl %5.1f (%+5.1f%%) %s\n", shp[i], stp[i], P[k], mp, 100 * (mp / bp - 1), md, 100 * (md / bd - 1), plan[i] } }'
echo
echo "== step (llama-8b products only, T=1, means of a process's 2 rounds) per setting: us plain, pdl; bw1 then bw2"
for n in bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue
  sed -n '/^llama-8b decode step at T=1 under each/,/^$/p' "$f" | grep -E '^Q' | sed "s/^/$n /"
done | awk '{ k = sprintf("%-7s %-22s", $2, $3); if (!(k in s)) { o[++n] = k }; s[k] = s[k] sprintf("  %s %s/%s %s%s%s", $1, $5, $8, $11, NF >= 13 ? "/" : "", $13) }
  END { for (i = 1; i <= n; i++) print o[i] s[o[i]] }'
echo
echo "== c. base tables' T=1 column (MB, T=1 us): main's cubin vs this cubin's default (bw1, bw2)"
for n in bw_main bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue
  echo "$n: $(grep -E '^Q[0-9]_[0-9K] +[a-z_]+ [0-9x]+' "$f" | grep -v ' T=' | grep -v ' | ' | awk '{printf "%s %s %s | ", $1, $2, $(NF-6)}')"
done
cat "$O/summary.txt"
