#!/bin/bash
# qpipe (issue 23): T=1 quantized products issue a unit's weight loads for
# all rows together. Run from the repo root on the GPU machine; needs
# /tmp/base.cubin (main's sm_90 cubin). Writes under $OUT; < 4 min.
#   new  = carry/qpipe/k.cubin.xz  (the branch's default build: BOTTOM)
#   pipe = carry/qpipe/kp.cubin.xz (the same tree built with -DMQ_PIPE=1)
#   1. -checks quant -parts kernels on new and pipe (float64 tolerances,
#      T=k rows bitwise = T=1)
#   2. -checks quant -parts bandwidth, Q4_K,Q6_K,Q8_0, no sweep, no mma:
#      base, new, pipe, base, new, pipe
#   3. time left: the kernels check on base (its "exact rel" column should
#      equal new's: the same sums), then new's full bandwidth table with
#      the K-split sweep.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
D=carry/qpipe
xz -dc $D/cc.test.xz > /tmp/qpipe_cc && chmod +x /tmp/qpipe_cc
xz -dc $D/k.cubin.xz > /tmp/qpipe.cubin
xz -dc $D/kp.cubin.xz > /tmp/qpipe_p.cubin
[ -f /tmp/base.cubin ] || { echo "no /tmp/base.cubin"; exit 1; }
T00=$(date +%s); BUDGET=230
run() { # name cubin timeout args...; the timeout is cut to what the budget has left
  local n=$1 c=$2 s=$3; shift 3; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 10 ] && { echo "$n skipped (budget)" | tee -a "$O/summary.txt"; return; }
  RIGSCOPE_CUDA_PTX=$c timeout "$s" /tmp/qpipe_cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1
  local r=$?; echo "exit status $r" >> "$O/$n.txt"
  echo "$n exit $r in $(( $(date +%s) - t0 )) s" | tee -a "$O/summary.txt"
}
BW="-checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K,Q8_0 -bwmma=false -bwsweep=false"
run kernels_new /tmp/qpipe.cubin 90 -checks quant -parts kernels
run kernels_pipe /tmp/qpipe_p.cubin 90 -checks quant -parts kernels
for i in 1 2; do
  run bw_base$i /tmp/base.cubin 45 $BW
  run bw_new$i /tmp/qpipe.cubin 45 $BW
  run bw_pipe$i /tmp/qpipe_p.cubin 45 $BW
done
run kernels_base /tmp/base.cubin 60 -checks quant -parts kernels
run bw_new_sweep /tmp/qpipe.cubin 120 -checks quant -parts bandwidth -bwmma=false

echo "== kernels check: lines not ok (new, pipe), and the count of ok lines"
for n in new pipe; do f="$O/kernels_$n.txt"; [ -f "$f" ] || continue
  echo "-- $n: $(grep -cE ' ok ok | ok$|= cpu ok' "$f") ok lines; $(grep -E '^--- (PASS|FAIL)' "$f")"
  grep -E '^(Q[0-9]|Q4_K\+)' "$f" | grep -vE ' ok ok | ok$|= cpu ok|\(T=5\) ok' | head -10
done
[ -f "$O/kernels_base.txt" ] && { echo "-- quant vs float64 table (exact rel ...), base vs new: $(diff <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/kernels_base.txt") <(grep -E '^Q[0-9]_[0-9K] +[a-z+]+ +[0-9]' "$O/kernels_new.txt") > /dev/null && echo identical || echo DIFFERENT)"; }

echo
echo "== products, us, Q4_K/Q6_K/Q8_0 (base1 base2 | new1 new2 | pipe1 pipe2): T=1 (plain launches), T=5; pdl T=1"
awk '
  FNR == 1 { f++ }
  /^(Q[0-9]_[0-9K]) +[a-z_]+ [0-9x]+/ && NF >= 11 && $0 !~ / T=[0-9]/ {
    k = $1 " " $2; if (!(k in ord)) { ord[k] = ++n; key[n] = k; name[n] = sprintf("%-5s %-8s %6s", $1, $2, $(NF-7)) }
    t1[k, f] = $(NF-6); t5[k, f] = $(NF-3)
  }
  /^(Q[0-9]_[0-9K]) +[a-z_]+ .* T=1 .* us plain, .* us pdl/ {
    match($0, /[0-9.]+ us pdl/); pdl[$1 " " $2, f] = substr($0, RSTART, RLENGTH - 7)
  }
  /^(Q8_0|Q4_K_M|Q6_K) +[0-9]+ +[0-9]+ / { k = $1; if (!(k in sord)) { sord[k] = ++sn; sname[sn] = k }
    st1[k, f] = $2; sb[k, f] = $3; st5[k, f] = $4; sp1[k, f] = $6; sp5[k, f] = $7 }
  END {
    printf "%-21s | %-20s | %-20s | %-20s\n", "type matrix MB", "T=1 b b|n n|p p", "T=5 b b|n n|p p", "pdl T=1 b b|n n|p p"
    for (i = 1; i <= n; i++) { k = key[i]
      printf "%-21s |", name[i]
      printf " %5s %5s|%5s %5s|%5s %5s |", t1[k,1], t1[k,4], t1[k,2], t1[k,5], t1[k,3], t1[k,6]
      printf " %5s %5s|%5s %5s|%5s %5s |", t5[k,1], t5[k,4], t5[k,2], t5[k,5], t5[k,3], t5[k,6]
      printf " %5s %5s|%5s %5s|%5s %5s\n", pdl[k,1], pdl[k,4], pdl[k,2], pdl[k,5], pdl[k,3], pdl[k,6] }
    print "\n== 8B decode step, products only (b b | n n | p p)"
    for (i = 1; i <= sn; i++) { k = sname[i]
      printf "%-7s T=1 us %s %s|%s %s|%s %s  tok/s %s %s|%s %s|%s %s  pdl T=1 %s %s|%s %s|%s %s  pdl T=5 %s %s|%s %s|%s %s\n", k,
        st1[k,1], st1[k,4], st1[k,2], st1[k,5], st1[k,3], st1[k,6], sb[k,1], sb[k,4], sb[k,2], sb[k,5], sb[k,3], sb[k,6],
        sp1[k,1], sp1[k,4], sp1[k,2], sp1[k,5], sp1[k,3], sp1[k,6], sp5[k,1], sp5[k,4], sp5[k,2], sp5[k,5], sp5[k,3], sp5[k,6] }
  }' "$O/bw_base1.txt" "$O/bw_new1.txt" "$O/bw_pipe1.txt" "$O/bw_base2.txt" "$O/bw_new2.txt" "$O/bw_pipe2.txt" | tee "$O/table.txt"
[ -f "$O/bw_new_sweep.txt" ] && { echo; echo "== new, all types: T=1/T=5 us, the K-split sweep (T=1), the step sums"; grep -E '^Q[0-9]_[0-9K] +[a-z_]+ [0-9x]+' "$O/bw_new_sweep.txt" | grep -v ' T=' | awk '$1 != p { if (p != "") print ""; p = $1; printf "%-5s", $1 } { printf " %s %s/%s", $2, $(NF-6), $(NF-3) } END { print "" }'; grep "T=1  policy" "$O/bw_new_sweep.txt" | cut -c1-110; grep -E "^(Q8_0|Q4_0|Q4_K_M|Q6_K|Q5_K) +[0-9]+ +[0-9]+ " "$O/bw_new_sweep.txt"; }
cat "$O/summary.txt"
