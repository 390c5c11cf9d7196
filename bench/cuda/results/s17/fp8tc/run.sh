#!/bin/bash
# fp8tc (issue 23: FP8 >= 75% of its bandwidth bound): FP8 products on the
# tensor cores (f8tc*: tc_body templated over the weight type, e4m3 tiles
# converted to bf16 exactly in registers), behind RIGSCOPE_CUDA_F8TC=1.
# Run from the repo root on the GPU machine; writes under $OUT; < 2 min.
#   k.cubin     the branch (TC8_U=TC8_UG=4 tiles a run, launch bounds for
#               the bf16 kernels' occupancy: tcf32_1/tcn32_1 spill ~30 B)
#   kfree.cubin -DTC8_UNBOUNDED (no launch bounds: fewer blocks, no spills)
#   ku2.cubin   -DTC8_U=2 -DTC8_UG=2 (2 tiles a run)
#   kug2.cubin  -DTC8_UG=2 (GLU 2 tiles a run: no spills)
# 1. knob off, k: -checks fp8 -parts kernels,bandwidth (kernels: mv_f8 and
#    the f8tc* paths side by side against float64, T=k bitwise T=1, row
#    tiles and x split ahead bitwise; bandwidth: each llama-8b shape mv
#    then tc in one process)
# 2. knob on, k: -checks fp8 -parts models (gocoder FP8 in each scheme
#    through the f8tc* kernels in whole steps: GPU vs CPU, verify vs decode)
# 3. the tc bandwidth rows of the variants; 4. budget left: -checks kernels
#    (the bf16 tensor-core kernels, tc_body now a template) on k.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
C=$PWD/carry/fp8tc
xz -dc $C/cc.test.xz > /tmp/fp8tc_cc && chmod +x /tmp/fp8tc_cc
for v in k kfree ku2 kug2; do xz -dc $C/$v.cubin.xz > /tmp/fp8tc_$v.cubin; done
(cd /tmp && xz -dc $C/m.tar.xz | tar xf -)
T00=$(date +%s); BUDGET=112
run() { # name cubin timeout args...; the timeout cut to the budget left
  local n=$1 c=$2 s=$3; shift 3; local t0=$(date +%s)
  local left=$(( BUDGET - (t0 - T00) )); [ "$left" -lt "$s" ] && s=$left
  [ "$s" -lt 8 ] && { echo "$n skipped (budget)" | tee -a "$O/summary.txt"; return; }
  RIGSCOPE_CUDA_PTX=/tmp/fp8tc_$c.cubin timeout "$s" /tmp/fp8tc_cc -test.run TestCUDACheck -test.timeout 0 -test.v -models /tmp "$@" > "$O/$n.txt" 2>&1
  local r=$?; echo "exit status $r" >> "$O/$n.txt"
  echo "$n exit $r in $(( $(date +%s) - t0 )) s" | tee -a "$O/summary.txt"
}
RIGSCOPE_CUDA_F8TC=0 run fp8_off k 50 -checks fp8 -parts kernels,bandwidth
RIGSCOPE_CUDA_F8TC=1 run fp8_on_models k 35 -checks fp8 -parts models
for v in kfree ku2 kug2; do run bw_$v $v 12 -checks fp8 -parts bandwidth -fp8bw tc; done
run kernels_bf16 k 30 -checks kernels
BW="^(matrix|qkv |wo |gate_up|down|32 FP8)"
echo "=== 1. knob off (k): fp8 kernels (mv and tc paths), bandwidth"
grep -E "FAIL|panic|exit status|^(--- |ok|PASS)" "$O/fp8_off.txt" | head -12
grep -cE " ok$| ok \(" "$O/fp8_off.txt" | sed 's/^/kernel rows ok: /'
grep -E "$BW|T=1 .*pdl" "$O/fp8_off.txt"
echo "=== 2. knob on (k): models through f8tc*"
grep -E "^gocoder|FAIL|panic|exit status|^(--- |ok|PASS)" "$O/fp8_on_models.txt" | head -20
for v in kfree ku2 kug2; do echo "=== 3. tc bandwidth, $v"; grep -E "$BW|FAIL|panic|exit status" "$O/bw_$v.txt"; done
echo "=== 4. bf16 kernels (k)"; grep -E "FAIL|panic|exit status|^(--- |ok|PASS)" "$O/kernels_bf16.txt" | head -8
