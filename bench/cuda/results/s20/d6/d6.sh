#!/bin/bash
# Session 20, call D6: the quant bandwidth table (per-kernel times of the llama-8b products at T=1
# and T=5, and the products-only step per file type) for Q4_K, Q6_K (a Q4_K_M step) and Q8_0.
O=${OUT:-/tmp/out}; mkdir -p $O
xz -dc carry/d6/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
timeout 400 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K,Q8_0 -bwsweep=false -bwmma=false > $O/quant-bw.txt 2>&1
echo "exit $?"; grep -vE "^=== RUN" $O/quant-bw.txt | head -80
