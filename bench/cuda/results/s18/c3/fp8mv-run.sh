#!/bin/bash
# fp8mv (issue 23: FP8 >= 75% of its bound): FP8 products in quant_mv.cu's
# shape (mf8*, kernels/fp8_mv.cu, fp8_mvs.cu) behind RIGSCOPE_CUDA_F8MV.
# F8MV specs: 1 (one token R 4; several tokens the bucket's kernel), l (T>1:
# decoded every token), s / sw (T=2..8: T-exact kernels mf8*_Ts/_Tsw, each
# chunk decoded once and the next one requested before the tokens' products,
# 8-warp blocks, R 2 / 4 rows a group (GLU 1 / 2)), w4, w16 (s, sw: 4-warp, 16-warp (s only) blocks).
# Run from the repo root on the GPU machine; outputs under $OUT; < 3 min.
#   /tmp/base.cubin  main's kernels (the lead's)   /tmp/k.cubin  this branch
# 1. k: -checks fp8 -parts kernels (mv_f8, mf8* variants incl. s/sw, f8tc*
#    vs float64, T=k bitwise T=1, variants of one split bitwise mf's; the
#    tc "split ahead" rows need the devHelper.up sync fix in this binary)
# 2. bandwidth, alternating base (mv) / k (paths), 32 layers with PDL,
#    T=1/2/5/8, and per shape T=1/5/8
# 3. gocoder FP8 (only if /tmp/m or carry/mx/m.tar.xz exists), F8MV=1,s
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
C=carry/fp8mv
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc $C/k.cubin.xz > /tmp/k.cubin
[ -f /tmp/base.cubin ] || echo "WARNING: no /tmp/base.cubin (base rows will fail)"
M=/tmp/m
[ -d $M ] || { [ -f carry/mx/m.tar.xz ] && (cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); }
T00=$(date +%s); BUDGET=170
cc() { # name cubin timeout args...; the timeout cut to the budget left
  local n=$1 k=$2 s=$3; shift 3; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 10 ] && { echo "## $n skipped (budget)"; return; }
  RIGSCOPE_CUDA_PTX=/tmp/$k.cubin timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1
  echo "## $n exit $? in $(( $(date +%s) - t0 )) s"
}
BWK="mv,mf=1,mf=l,mf=s,mf=s+w4,mf=s+w16,mf=sw,mf=sw+w4,tc"
cc kernels k 60 -checks fp8 -parts kernels
cc bw_base1 base 25 -checks fp8 -parts bandwidth -fp8bw mv
cc bw_k1 k 40 -checks fp8 -parts bandwidth -fp8bw "$BWK"
cc bw_base2 base 25 -checks fp8 -parts bandwidth -fp8bw mv
cc bw_k2 k 40 -checks fp8 -parts bandwidth -fp8bw "$BWK"
if [ -f $M/reference-public.json ]; then
  RIGSCOPE_CUDA_F8MV=1,s cc models_s k 40 -checks fp8 -parts models -models $M
else echo "## models skipped: no $M (gocoder fixtures not carried)"; fi
echo "=== 1. fp8 kernels (k): rows not ok, then counts"
grep -E "panic|cuda-check:|^(--- |ok|PASS|FAIL)" "$O/kernels.txt" | head -6
grep -E "^(per-|block-|qkv )" "$O/kernels.txt" | grep -vE " ok$| ok \(" | head -6
echo "kernel rows ok: $(grep -cE ' ok$| ok \(' "$O/kernels.txt"), not ok: $(grep -E '^(per-|block-|qkv )' "$O/kernels.txt" | grep -cvE ' ok$| ok \(')"
echo "mf s/sw rows ok: $(grep -E '^[a-z0-9 -]+ +mf s' "$O/kernels.txt" | grep -cE ' ok$'), tc rows ok: $(grep -E '^[a-z0-9 -]+ +tc' "$O/kernels.txt" | grep -cE ' ok$| ok \(')"
echo "=== 2. bandwidth: 32 layers' products with PDL, us T=1 T=2 T=5 T=8 (T=5/T=1), run 1 | run 2 (base: main's cubin, mv)"
for f in bw_base1 bw_k1 bw_base2 bw_k2; do grep -hE "panic|cuda-check:" "$O/$f.txt" | head -2 | sed "s/^/$f: /"; done
for f in bw_base1 bw_k1 bw_base2 bw_k2; do
  grep -E "^32 FP8 .*pdl: T=1" "$O/$f.txt" | grep -v "with gate_up on tc" | sed -E "s/^32 FP8 layers' products, (.*), pdl: T=1 ([0-9]+) us \(([0-9]+)% of the bound\), T=5 ([0-9]+) us \(([0-9.]+)x\), T=2 ([0-9]+) us, T=8 ([0-9]+) us.*/\1|\2|\6|\4|\7|\5/" \
    | sed "s/^mv|/$( [ ${f%?} = bw_base ] && echo base || echo mv )|/" | sed "s/^/${f: -1}|/"
done | awk -F'|' '{k=$2; if(!(k in R)) o[++n]=k; R[k]=R[k] sprintf(" %5s %5s %5s %5s (%4.2f) |", $3, $4, $5, $6, $7)}
  END{for(i=1;i<=n;i++) printf "%-26s%s\n", o[i], R[o[i]]}'
echo "-- per shape, pdl us, run 2 (bw_base2 mv as base, then bw_k2's paths)"
{ sed -E 's/ mv( +T=)/ base\1/' "$O/bw_base2.txt"; cat "$O/bw_k2.txt"; } | grep -E " T=(1|5|8) .* us pdl" | sed -E 's/^(.*[^ ]) +T=([0-9]+) +[0-9.]+ us plain, +([0-9.]+) us pdl.*/\2 \1 \3/' \
  | awk '{t=$1; p=$(NF-1); v=$NF; sh=$2; k=sh" T="t; if(!(k in L)){o[++n]=k}; L[k]=L[k]" "p"="v}
         END{for(i=1;i<=n;i++) print o[i]":"L[o[i]]}' | sort -s -k1,1
echo "=== 3. gocoder FP8 (F8MV=1,s)"
[ -f "$O/models_s.txt" ] && grep -E "^gocoder|panic|cuda-check:|^(--- |ok|PASS|FAIL)" "$O/models_s.txt" | head -12
exit 0
