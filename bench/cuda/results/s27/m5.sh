#!/bin/bash
# Session 27, call m5 (about 4 device minutes past the start): mqg_q4k_1w8p (kernels/quant_mv.cu
# mqr_glu_body, RIGSCOPE_CUDA_MQR=1), the one-token Q4_K GLU with its 8 row slices in a loop whose
# next slice's loads are carried over the back edge, against mqg_q4k_1w8. v.cubin: the working
# tree's image, for both. 1. -checks quant -parts kernels with MQR=1 (the fused GLU at T=1 bitwise
# the unfused one); 2. cuda-bench Q4_K_M base / MQR alternating, two rounds if time allows.
# carry/m5: rigscope-cuda.xz, cc.test.xz, v.cubin.xz.
. bench/cuda/call.sh; call_init m5
unpack carry/m5 rigscope-cuda cc.test v.cubin
B=/tmp/rigscope-cuda; V=RIGSCOPE_CUDA_PTX=/tmp/v.cubin
q4km_start $B
el "checks quant kernels MQR=1"
timeout 100 env $V RIGSCOPE_CUDA_MQR=1 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts kernels -models /nonexistent > $O/x/q.txt 2>&1; echo "exit $?"
grep -cE " ok" $O/x/q.txt; grep -E "FAIL|panic|rror" $O/x/q.txt | head -6
snap; q4km_wait
cb() { local tag=$1; shift; timeout 40 env $V "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^gate_up " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: base / MQR"
for r in 1 2; do left 200 || break; cb base$r RIGSCOPE_CUDA_MQR=0; cb mqr$r RIGSCOPE_CUDA_MQR=1; done
el done
snap; rm -rf $O/x
