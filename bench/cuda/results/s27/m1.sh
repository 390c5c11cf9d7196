#!/bin/bash
# Session 27, call m1 (about 4 device minutes past the start): the staged one-token Q4_K GLU
# (kernels/quant_mvp.cu, RIGSCOPE_CUDA_MQP=stages) against mqg_q4k_1w8, which it replaces.
# v.cubin is the working tree's image (nvcc 11.8 -ptx -arch=compute_90, ptxas sm_90), loaded by
# every run here through RIGSCOPE_CUDA_PTX, so base and variants share one image.
# 1. -checks quant -parts mqp: output and fused quantization bitwise against mqg_q4k_1w8 at
#    stages 2, 3, 4, 6 (llama-8b gate/up and a partial-stage K), and each kernel's us a call;
# 2. cuda-bench on the synthetic llama-8b as Q4_K_M: MQP 0 / 3 / 4 / 6 alternating, two rounds,
#    and the embedded (old) image once as a check that the mq_dots refactor left mq_body as it was.
# carry/m1: rigscope-cuda.xz, cc.test.xz, v.cubin.xz (builds: results/s26/README.md).
. bench/cuda/call.sh; call_init m1
C=carry/m1
unpack $C rigscope-cuda cc.test v.cubin
B=/tmp/rigscope-cuda; V=RIGSCOPE_CUDA_PTX=/tmp/v.cubin
q4km_start $B
el "checks quant mqp"
timeout 120 env $V /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts mqp -models /nonexistent > $O/x/mqp.txt 2>&1; echo "exit $?"
grep -A14 "^staged" $O/x/mqp.txt; grep -E "FAIL|panic|rror" $O/x/mqp.txt | head
snap; q4km_wait
cb() { local tag=$1; shift; timeout 40 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^gate_up " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: MQP 0 / 3 / 4 / 6"
cb old RIGSCOPE_CUDA_MH=0
for r in 1 2; do left 400 || break; for s in 0 3 4 6; do cb s$s-$r $V RIGSCOPE_CUDA_MQP=$s; done; done
el done
snap; rm -rf $O/x
