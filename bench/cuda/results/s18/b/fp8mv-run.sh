#!/bin/bash
# fp8mv (issue 23: FP8 >= 75% of its bound): FP8 products in quant_mv.cu's
# shape (mf8*, kernels/fp8_mv.cu) behind RIGSCOPE_CUDA_F8MV (off by
# default): a group of ks warps owns R rows (ks by shape: qkv 2, gate_up 1,
# wo/down 4), lanes stride K by 16-byte chunks, each x load serves R (GLU
# 2R) rows, one token loads the next chunk at the loop's bottom.
# F8MV specs: 1 (R 4), r2 (R 2), t (loads at the top), p (persistent grid,
# next row block's first loads during the reduction), b (T>1: loads at the
# bottom too), l (T>1: each chunk decoded every token), ksN (split forced).
# Run from the repo root on the GPU machine; outputs under $OUT; < 4 min.
#   /tmp/base.cubin  main's kernels (the lead's)   /tmp/k.cubin  this branch
# 1. k: -checks fp8 -parts kernels (mv_f8, mf8* variants, f8tc* vs float64,
#    T=k bitwise T=1, variants of one split bitwise mf's, embed)
# 2. bandwidth tables, alternating base (mv only) / k (mv, mf variants, tc,
#    and each mf with gate_up on tc), T=1,5 with PDL summed over 32 layers
# 3. gocoder FP8 (3 schemes) GPU vs CPU + verify(15) vs decode, F8MV=1 and
#    F8MV=1 with F8TC=gate_up
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
C=carry/fp8mv
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc $C/k.cubin.xz > /tmp/k.cubin
[ -f /tmp/base.cubin ] || echo "WARNING: no /tmp/base.cubin (base rows will fail)"
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
T00=$(date +%s); BUDGET=225
cc() { # name cubin timeout args...; the timeout cut to the budget left
  local n=$1 k=$2 s=$3; shift 3; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 10 ] && { echo "## $n skipped (budget)"; return; }
  RIGSCOPE_CUDA_PTX=/tmp/$k.cubin timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1
  echo "## $n exit $? in $(( $(date +%s) - t0 )) s"
}
BWK="mv,mf=1,mf=p,mf=r2,mf=r2+p,mf=t,mf=b,mf=l,mf=ks2,mf=ks4,tc"
cc kernels k 40 -checks fp8 -parts kernels
cc bw_base1 base 20 -checks fp8 -parts bandwidth -fp8bw mv
cc bw_k1 k 35 -checks fp8 -parts bandwidth -fp8bw "$BWK"
RIGSCOPE_CUDA_F8MV=1 cc models_mf k 40 -checks fp8 -parts models -models $M
cc bw_base2 base 20 -checks fp8 -parts bandwidth -fp8bw mv
cc bw_k2 k 35 -checks fp8 -parts bandwidth -fp8bw "$BWK"
RIGSCOPE_CUDA_F8MV=1 RIGSCOPE_CUDA_F8TC=gate_up cc models_mftc k 40 -checks fp8 -parts models -models $M
echo "=== 1. fp8 kernels (k): rows not ok, then counts"
grep -E "panic|cuda-check:|^(--- |ok|PASS|FAIL)" "$O/kernels.txt" | head -6
grep -E "^(per-|block-|qkv )" "$O/kernels.txt" | grep -vE " ok$| ok \(" | head -6
echo "kernel rows ok: $(grep -cE ' ok$| ok \(' "$O/kernels.txt"), not ok: $(grep -E '^(per-|block-|qkv )' "$O/kernels.txt" | grep -cvE ' ok$| ok \(')"
echo "=== 2. bandwidth: 32 layers' products with PDL, us (T=1 / T=5), run 1 then run 2 (base: main's cubin)"
for f in bw_base1 bw_k1 bw_base2 bw_k2; do grep -hE "panic|cuda-check:" "$O/$f.txt" | head -2 | sed "s/^/$f: /"; done
for f in bw_base1 bw_k1 bw_base2 bw_k2; do
  grep -E "^32 FP8 .*pdl: T=1" "$O/$f.txt" | sed -E "s/^32 FP8 layers' products, (.*), pdl: T=1 ([0-9]+) us \(([0-9]+)% of the bound\), T=5 ([0-9]+) us.*/\1|\2|\3|\4/" \
    | sed "s/^mv|/$( [ ${f%?} = bw_base ] && echo base || echo mv )|/" | sed "s/^/${f: -1}|/"
done | awk -F'|' '{k=$2; if(!(k in R)) o[++n]=k; R[k]=R[k] sprintf("  %5s/%5s (%s%%)", $3, $5, $4)}
  END{for(i=1;i<=n;i++) printf "%-32s%s\n", o[i], R[o[i]]}'
echo "-- per shape, pdl us (bw_base2 mv first, then bw_k2's paths)"
{ sed -E 's/ mv( +T=)/ base\1/' "$O/bw_base2.txt"; cat "$O/bw_k2.txt"; } | grep -E " T=(1|5) .* us pdl" | sed -E 's/^(.*[^ ]) +T=([0-9]+) +[0-9.]+ us plain, +([0-9.]+) us pdl.*/\2 \1 \3/' \
  | awk '{t=$1; p=$(NF-1); v=$NF; sh=$2; k=sh" T="t; if(!(k in L)){o[++n]=k}; L[k]=L[k]" "p"="v}
         END{for(i=1;i<=n;i++) print o[i]":"L[o[i]]}'
echo "=== 3. gocoder FP8 (F8MV=1; then with F8TC=gate_up)"
for f in models_mf models_mftc; do echo "-- $f"
  grep -E "^gocoder|panic|cuda-check:|^(--- |ok|PASS|FAIL)" "$O/$f.txt" | head -12; done
