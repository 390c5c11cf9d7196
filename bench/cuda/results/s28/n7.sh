#!/bin/bash
# Session 28, call n7: the _r64 twins of the mqk products up to 8 tokens (kernels/quant_mqk.cu: held to
# 64 registers, 32/W blocks of W warps an SM; n6's ncu found the down products at a quarter of an SM's
# warps, waiting on loads) and RIGSCOPE_CUDA_MQK=Wr, which takes them.
# 1. -checks quant -parts mqk: every kernel (the _r64 ones too) against float64, T=k rows bitwise T=1,
#    the product path with MQK=8, then the kernels' times;
# 2. -checks quant -parts models with MQK=16r: verify(15) rows bitwise decode's, greedy against the
#    reference and the CPU;
# 3. cuda-bench, synthetic llama-8b as Q4_K_M: default / MQK=8 / MQK=8r / MQK=16r alternating, two rounds.
# carry/n7: rigscope-cuda.xz, cc.test.xz (cubinonly builds of the tree), q8.gguf.xz
# (gocoder-14m.Q8_0.gguf), m.tar.xz (reference-public.json). kernels/*.gz are moved out of the tree
# for the call (the binaries embed the cubin).
. bench/cuda/call.sh; call_init n7
C=carry/n7
unpack $C rigscope-cuda cc.test q8.gguf
mkdir -p /tmp/models && mv /tmp/q8.gguf /tmp/models/gocoder-14m.Q8_0.gguf && xz -dc $C/m.tar.xz | tar xf - -C /tmp/models
B=/tmp/rigscope-cuda
q4km_start $B
el "checks quant mqk"
timeout 200 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|rror" $O/x/mqk.txt | head -5; grep -E "^(type|Q4_K|Q6_K) " $O/x/mqk.txt | grep -vE " (path|[0-9]+,[0-9]r?) +[01a-z]+ " | head -80
snap
el "checks quant models, MQK=16r"
timeout 150 env RIGSCOPE_CUDA_MQK=16r /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts models -models /tmp/models > $O/x/models.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|rror" $O/x/models.txt | head -8; grep -E "^(model|gocoder)" $O/x/models.txt
snap; q4km_wait
cb() { local f=$1 tag=$2; shift 2; timeout 40 env "$@" $B cuda-bench --model $f --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^(gate_up|qkv|down|wo|quantx|output|attention) " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: default / MQK=8 / MQK=8r / MQK=16r"
for r in 1 2; do left 420 || break; for m in 0 8 8r 16r; do cb $F mqk$m-$r RIGSCOPE_CUDA_MQK=$m; done; done
el done
snap; rm -rf $O/x
