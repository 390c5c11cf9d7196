#!/bin/bash
# Session 18, call C3: the product path on the merged tree (generate --device cuda ahead / one step at a
# time beside cuda-bench, llama-8b bf16, 2 rounds: bench/cuda/ahead.sh), then helper fp8mv's run.sh
# (FP8 mf products with the T=2..8 variants s/sw; base = main's cubin).
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
el ahead.sh; OUT=$O/ahead sh bench/cuda/ahead.sh 2>&1 | tee $O/ahead.txt
xz -dc carry/base/base.cubin.xz > /tmp/base.cubin
el fp8mv; OUT=$O/fp8mv bash carry/fp8mv/run.sh 2>&1 | tee $O/fp8mv.txt
el done
