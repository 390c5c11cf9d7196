#!/bin/bash
# Session 16, call C: the merged tree (qpipe's one-token quant loads, Q8_0 and Q4_K's GLU excepted; K split <= 2;
# tc first tiles before pdl_wait; grouped attention merge in one round trip): quant kernel checks and products,
# rigscope alone on Q4_K_M and Q8_0 GGUFs (LLAMA=0), then the product path (generate vs cuda-bench, bf16, 2 rounds).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
cp carry/b/rigscope-cuda.gz carry/rigscope-cuda.gz
xz -dc carry/b/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
cc() { timeout ${TO:-90} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "quant kernels"; cc -checks quant -parts kernels > $O/quant-kernels.txt 2>&1; echo "exit $?"; grep -E '^--- (PASS|FAIL)' $O/quant-kernels.txt; grep -E '^(Q[0-9]|Q4_K\+)' $O/quant-kernels.txt | grep -vE ' ok ok | ok$|= cpu ok|\(T=5\) ok' | head -5
el "quant bandwidth"; cc -checks quant -parts bandwidth -bwmma=false -bwsweep=false > $O/quant-bw.txt 2>&1; echo "exit $?"; grep -E "^(Q8_0|Q4_0|Q4_K_M|Q6_K|Q5_K) +[0-9]+ +[0-9]+ " $O/quant-bw.txt
el "quant.sh"; LLAMA=0 TYPES="q4_k_m q8_0" ROUNDS=2 OUT=$O/quant sh bench/cuda/quant.sh 2>&1 | tail -6
el "product.sh"; SPEC=0 ROUNDS=2 OUT=$O/product sh bench/cuda/product.sh 2>&1 | tail -8
el done
