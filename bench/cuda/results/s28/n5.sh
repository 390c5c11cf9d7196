#!/bin/bash
# Session 28, call n5: n3 (HEAD db2af55) with the Q6_K products reading their 2-byte aligned blocks as
# aligned words and one prmt a pair (no per-chunk address arithmetic or selects: 788 SASS instructions
# against 1196 for mqk_q6k_8_w8_u1) and the other group masked in the activation, not the weights.
# 1. -checks quant -parts mqk: qk_x bitwise the CPU's Q8_K, every kernel against float64, T=k rows
#    bitwise T=1, the product path with MQK=8 in every mode, then the kernels' times;
# 2. -checks quant -parts models with MQK=8: the gocoder files (Q4_K_M written from the Q8_0) greedy
#    against the reference and the CPU, verify(15) rows bitwise decode's;
# 3. cuda-bench, synthetic llama-8b as Q4_K_M: default / MQK=8 alternating, two rounds.
# carry/n5: rigscope-cuda.xz, cc.test.xz (cubinonly builds of the tree), q8.gguf.xz
# (gocoder-14m.Q8_0.gguf), m.tar.xz (reference-public.json). kernels/*.gz are moved out of the tree
# for the call (the binaries embed the cubin).
. bench/cuda/call.sh; call_init n5
C=carry/n5
unpack $C rigscope-cuda cc.test q8.gguf
mkdir -p /tmp/models && mv /tmp/q8.gguf /tmp/models/gocoder-14m.Q8_0.gguf && xz -dc $C/m.tar.xz | tar xf - -C /tmp/models
B=/tmp/rigscope-cuda
q4km_start $B
el "checks quant mqk"
timeout 200 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "exit $?"
grep -vE "^(=== |--- )" $O/x/mqk.txt | head -120
snap
el "checks quant models, MQK=8"
timeout 150 env RIGSCOPE_CUDA_MQK=8 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts models -models /tmp/models > $O/x/models.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|rror" $O/x/models.txt | head -8; grep -A8 "^model " $O/x/models.txt; grep -A8 "^verify(15)" $O/x/models.txt
snap; q4km_wait
cb() { local f=$1 tag=$2; shift 2; timeout 40 env "$@" $B cuda-bench --model $f --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^(gate_up|qkv|down|wo|quantx|output|attention) " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: default / MQK=8"
for r in 1 2; do left 480 || break; for m in 0 8; do cb $F mqk$m-$r RIGSCOPE_CUDA_MQK=$m; done; done
el done
snap; rm -rf $O/x
