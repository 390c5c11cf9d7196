#!/bin/bash
# q4pipe (issue 23): Q4_K's one-token products streamed through shared memory
# by cp.async (kernels/quant_pipe.cu; RIGSCOPE_CUDA_MQV entries, persistent
# grid of 4 blocks an SM). Run from the repo root on the GPU machine; writes
# under $OUT; about 1-2 min. D = defaultMQV; each setting is D plus entries
# (an entry naming the same kernel replaces D's):
#   q4glup1s8 q4glup2s4 q4glup2s5 (mqg_q4k_1p<R>s<NS>: GLU, R rows/warp, NS stages)
#   q4mqp1s16 q4mqp2s8 q4mqp4s4 (mq_q4k: wo, down)
#   q4np1s16 q4np2s8 q4np4s4 (mqn_q4k: qkv, and the Q4_K output row)
#   q4glup2s4f q4mqp2s8f (the same kernels, a warp per row group: no cap on the grid)
# a. -checks quant -parts kernels, default and 4 settings covering all 9
#    new kernels (T=1 rows bitwise the T=k rows, float64 tolerances, fused
#    output quantization bitwise qx, mixed Q4_K/Q6_K stack)
# b. bandwidth table Q4_K,Q6_K with -bwmqv (each setting alternating with
#    base in one process, 2 rounds), the process run twice
# c. if /tmp/base.cubin exists: main's table once (T=1 pdl of the default)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
C=carry/q4pipe
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc $C/k.cubin.xz > /tmp/k.cubin
T00=$(date +%s); BUDGET=200
run() { # name cubin timeout mqv args...
  local n=$1 c=$2 s=$3 v=$4; shift 4; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 10 ] && { echo "$n skipped (budget)" >> "$O/summary.txt"; return; }
  RIGSCOPE_CUDA_MQV=$v RIGSCOPE_CUDA_PTX=$c timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1
  local r=$?; echo "exit status $r" >> "$O/$n.txt"
  echo "$n exit $r in $(( $(date +%s) - t0 )) s" >> "$O/summary.txt"
}
D="q4mq2,q6glu2,q6n2,q80r2,q80ks2"
K="-checks quant -parts kernels"
run k_default /tmp/k.cubin 40 "" $K
run k_p1 /tmp/k.cubin 40 "$D,q4glup1s8,q4mqp2s8,q4np2s8" $K
run k_p2 /tmp/k.cubin 40 "$D,q4glup2s4,q4mqp4s4,q4np4s4" $K
run k_p3 /tmp/k.cubin 40 "$D,q4glup2s5,q4mqp1s16,q4np1s16" $K
run k_p4 /tmp/k.cubin 40 "$D,q4glup2s4f,q4mqp2s8f" $K
SETS="$D,q4glup1s8;$D,q4glup2s4;$D,q4glup2s5;$D,q4glup2s4f;$D,q4mqp2s8f;$D,q4mqp1s16;$D,q4mqp2s8;$D,q4mqp4s4;$D,q4np1s16;$D,q4np2s8;$D,q4np4s4;$D,q4glup2s4,q4mqp2s8,q4np1s16;$D,q4glup1s8,q4mqp1s16,q4np1s16"
BW="-checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K -bwmma=false -bwsweep=false"
run bw1 /tmp/k.cubin 60 "" $BW "-bwmqv=$SETS"
run bw2 /tmp/k.cubin 60 "" $BW "-bwmqv=$SETS"
[ -f /tmp/base.cubin ] && run bw_main /tmp/base.cubin 40 "" $BW

echo "== a. kernels check per RIGSCOPE_CUDA_MQV (T=1 rows = T=k rows bitwise, float64 tol, fused qx bitwise)"
for n in k_default k_p1 k_p2 k_p3 k_p4; do f="$O/$n.txt"; [ -f "$f" ] || continue
  echo "-- $n: $(grep -cE ' ok ok | ok$|= cpu ok| ok \(qx' "$f") ok lines, $(grep -c 'FAIL' "$f") FAIL lines; $(grep -E '^--- (PASS|FAIL)' "$f")"
  grep -E 'FAIL|panic|error|CUDA_ERROR' "$f" | head -4
done
for n in k_p1 k_p2 k_p3 k_p4; do [ -f "$O/$n.txt" ] && echo "-- error table $n vs default: $(diff <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/k_default.txt") <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/$n.txt") > /dev/null && echo identical || echo DIFFERENT)"; done
echo
echo "== b. T=1 us per setting (output rows left out), 4 rounds (bw1, bw2): plain mean (vs base), pdl r1..r4 = mean (vs base); kernel/blocks/ks"
for n in bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue; sed -n '/^one-token variants/,/^$/p' "$f" | grep ' | ' | grep -v '^one-token' | grep -v 'output 128256'; done | sed "s/$D/D/g" | awk -F' [|] ' '
  { sh = $1; gsub(/ +/, " ", sh); split(sh, w, " "); sh = w[1] " " w[2]; st = $2; sub(/ +$/, "", st); k = sh SUBSEP st
    if (!(k in seen)) { seen[k] = 1; ord[++n] = k; shp[n] = sh; stp[n] = st; plan[n] = $5; cnt[sh]++ }
    split($3, a, " "); split($4, b, " "); sp[k] += a[1] + a[2]; sd[k] += b[1] + b[2]; c[k] += 2; P[k] = P[k] sprintf(" %5.1f", b[1]) sprintf(" %5.1f", b[2])
    if (st ~ /^base/) base[sh] = k }
  END { for (i = 1; i <= n; i++) { k = ord[i]; bk = base[shp[i]]; if (cnt[shp[i]] < 2) continue
      mp = sp[k] / c[k]; md = sd[k] / c[k]; bp = sp[bk] / c[bk]; bd = sd[bk] / c[bk]
      printf "%-14s %-28s plain %5.1f (%+5.1f%%) pdl%s = %5.1f (%+5.1f%%) %s\n", shp[i], stp[i], mp, 100 * (mp / bp - 1), P[k], md, 100 * (md / bd - 1), plan[i] } }'
echo
echo "== step products (llama-8b, T=1; means of a process's 2 rounds) per setting: us plain / pdl, bw1 then bw2"
for n in bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue
  sed -n '/^llama-8b decode step at T=1 under each/,/^$/p' "$f" | grep -E '^Q' | sed "s/$D/D/g; s/^/$n /"
done | awk '{ k = sprintf("%-7s %-30s", $2, $3); if (!(k in s)) { o[++n] = k }; s[k] = s[k] sprintf("  %s/%s %s%s%s", $5, $8, $11, NF >= 13 ? "/" : "", $13) }
  END { for (i = 1; i <= n; i++) print o[i] s[o[i]] }'
echo
echo "== c. T=1 pdl per product (MB, us): main's cubin (bw_main) vs this cubin's default (bw1, bw2)"
for n in bw_main bw1 bw2; do f="$O/$n.txt"; [ -f "$f" ] || continue
  echo "$n: $(grep -E 'T=1 .* us pdl' "$f" | awk '{printf "%s %s %s | ", $1, $2, $(NF-4)}')"
done
cat "$O/summary.txt"
