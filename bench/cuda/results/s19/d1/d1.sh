#!/bin/bash
# Session 19, call D1: branch fp8merge (main + fp8mv, kernels regenerated) against main.
# 1. bf16 llama-8b cuda-bench, main / fp8merge alternating, 2 rounds (17 bf16 tc kernels changed code)
# 2. fp8merge checks kernels,models,kv,fp8 (default), then fp8 under RIGSCOPE_CUDA_F8MV=1,sw,w4
# 3. FP8 llama-8b cuda-bench: default / F8MV=1,sw,w4 alternating, 2 rounds
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
for b in cc.test rigscope-f8 rigscope-main; do xz -dc carry/d1/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
(cd /tmp && xz -dc "$OLDPWD/carry/mt/t.tar.xz" | tar xf -); M=/tmp/m
left() { echo $(( 560 - ($(date +%s) - t0) )); }
cb() { # name binary args
  local n=$1 b=$2; shift 2; local s=$(left); [ $s -gt 100 ] && s=100; [ $s -lt 20 ] && { echo "skip $n"; return; }
  timeout $s /tmp/$b cuda-bench --shapes llama-8b --tp 1 "$@" > $O/$n.txt 2>&1; echo "$n exit $?: $(grep -E '^ *llama-8b' $O/$n.txt | head -1)"; }
cc() { timeout ${TO:-100} /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el bf16; for r in 1 2; do cb bf16-main$r rigscope-main; cb bf16-f8m$r rigscope-f8; done
head -8 $O/bf16-main1.txt
el checks; cc -checks kernels,models,kv,fp8 -models $M > $O/checks.txt 2>&1; echo "exit $?"; bad $O/checks.txt
grep -E "^--- |12/12|differ" $O/checks.txt | head; echo "ok rows: $(grep -cE ' ok$| ok \(' $O/checks.txt)"
grep -E "^(32 FP8|gocoder|fp8 )" $O/checks.txt | head -20
el checks-mf; RIGSCOPE_CUDA_F8MV=1,sw,w4 cc -checks fp8 -models $M > $O/checks-mf.txt 2>&1; echo "exit $?"; bad $O/checks-mf.txt
grep -E "^--- " $O/checks-mf.txt; echo "ok rows: $(grep -cE ' ok$| ok \(' $O/checks-mf.txt)"
grep -E "^(32 FP8|gocoder|fp8 )" $O/checks-mf.txt | head -20
el f8; for r in 1 2; do cb f8-def$r rigscope-f8 --dtype f8_e4m3; RIGSCOPE_CUDA_F8MV=1,sw,w4 cb f8-mf$r rigscope-f8 --dtype f8_e4m3; done
head -8 $O/f8-def1.txt
el done
