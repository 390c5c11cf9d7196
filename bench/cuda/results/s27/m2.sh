#!/bin/bash
# Session 27, call m2 (about 5 device minutes past the start): the verify variants of the dp4a
# products (RIGSCOPE_CUDA_MQT: t5 a bucket of 5 tokens, r2 2 rows a group at 5 and 8 tokens; Q4_K,
# Q6_K, Q8_0). v.cubin is the working tree's image, loaded by every run through RIGSCOPE_CUDA_PTX.
# 1. -checks quant -parts kernels with MQT=t5,r2 and with MQT=t5: every product against float64,
#    T=k rows bitwise T=1 (so the variants keep the decode's bits), the fused quantization;
# 2. cuda-bench, synthetic llama-8b as Q4_K_M: MQT none / t5 / r2 / t5,r2 alternating, two rounds
#    (verify k=4 / decode, and the ungraphed verify-5 us per kind); 3. the same as Q8_0, one round.
# carry/m2: rigscope-cuda.xz, cc.test.xz, v.cubin.xz.
. bench/cuda/call.sh; call_init m2
C=carry/m2
unpack $C rigscope-cuda cc.test v.cubin
B=/tmp/rigscope-cuda; V=RIGSCOPE_CUDA_PTX=/tmp/v.cubin
q4km_start $B
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out /tmp/q/llama-8b.q8_0.gguf > /dev/null 2>&1; touch /tmp/q/done8 ) &
cq() { local tag=$1; shift; el "checks quant kernels MQT=$tag"; timeout 150 env $V "$@" /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts kernels -models /nonexistent > $O/x/q-$tag.txt 2>&1; echo "exit $?"; grep -cE " ok " $O/x/q-$tag.txt; grep -E "FAIL|panic|rror" $O/x/q-$tag.txt | head -8; }
cq t5r2 RIGSCOPE_CUDA_MQT=t5,r2
snap; q4km_wait
cb() { local f=$1 tag=$2; shift 2; timeout 40 env $V "$@" $B cuda-bench --model $f --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^(gate_up|qkv|down|wo) " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: MQT none / t5 / r2 / t5,r2"
for r in 1 2; do left 330 || break; for m in none t5 r2 t5,r2; do cb $F ${m/,/}-$r RIGSCOPE_CUDA_MQT=${m/none/}; done; done
snap
while [ ! -f /tmp/q/done8 ]; do sleep 2; done
el "cuda-bench q8_0: MQT none / t5,r2"
for m in none t5,r2; do left 480 || break; cb /tmp/q/llama-8b.q8_0.gguf q8-${m/,/} RIGSCOPE_CUDA_MQT=${m/none/}; done
left 500 && cq t5 RIGSCOPE_CUDA_MQT=t5
el done
snap; rm -rf $O/x
