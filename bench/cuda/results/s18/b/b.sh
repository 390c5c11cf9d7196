#!/bin/bash
# Session 18, call B: helper fp8mv's run.sh (FP8 products in quant_mv's shape; base = main's cubin), then this
# tree's ids and drafted tokens in mapped host memory (no copy back): ahead (llama-8b shape), head8b, eagletree-free parts.
O=${OUT:-/tmp/out}; mkdir -p $O
xz -dc carry/base/base.cubin.xz > /tmp/base.cubin
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
el fp8mv; OUT=$O/fp8mv bash carry/fp8mv/run.sh 2>&1 | tee $O/fp8mv.txt
xz -dc carry/ah/cc.test.xz > /tmp/ahcc && chmod +x /tmp/ahcc; xz -dc carry/ah/k.cubin.xz > /tmp/ahk.cubin
export RIGSCOPE_CUDA_PTX=/tmp/ahk.cubin
cc() { timeout ${TO:-120} /tmp/ahcc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el ahead; cc -checks ahead -models /nonexistent > $O/ahead.txt 2>&1; echo "exit $?"; bad $O/ahead.txt; sed -n '/^plain greedy decoding through/,/^$/p' $O/ahead.txt
el head8b; cc -checks head8b > $O/head8b.txt 2>&1; echo "exit $?"; bad $O/head8b.txt; grep -E "decode|draft step|^numerics" $O/head8b.txt | head -6
el done
