#!/bin/bash
# Session 34, call a2 (run after a1 in the same call: bench/cuda/results/s34/c1.sh): weights
# marked evict-first in L2. Image ef is main's kernels built with -DWEIGHT_EVICT_FIRST=1
# (kernels/kernels.cu: ld_stream and quant.cu's win load with createpolicy's evict_first policy
# and .L2::cache_hint), so that the stream of weights a step reads once does not push the
# kernels' code, the activations and the attention's partials out of L2 (s26 n3: about 12% of the
# attention's warp time was instruction fetch). Same arithmetic; loaded with RIGSCOPE_CUDA_PTX
# beside the default images, alternating, two rounds: the gocoder EAGLE-3 check (plain and EAGLE-3
# tok/s, cycle step; the whole pair fits in L2, so it shows whether evict-first costs a resident
# model), cuda-bench on the synthetic llama-8b as Q4_K_M (two rounds) and bf16 (one), `generate`
# token equality on the Q4_K_M. Built here:
#   cd /tmp/ef && cp kernels/*.cu . && nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_90 \
#     -DWEIGHT_EVICT_FIRST=1 -o ef.ptx kernels.cu && ptxas -arch=sm_90 -O3 -o ef.cubin ef.ptx
#   xz -T2 -6 -c ef.cubin > carry/ef/ef.cubin.xz
# The binaries are carry/a4's (built on 822c2f5: the same default images as this commit's).
. bench/cuda/call.sh; call_init ef
[ -x /tmp/cc.test ] || unpack carry/a4 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
[ -d /tmp/m/gocoder-14m-eagle3 ] || { mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m; }
xz -dc carry/ef/ef.cubin.xz > /tmp/ef.cubin; EF=RIGSCOPE_CUDA_PTX=/tmp/ef.cubin
CB_KINDS='attention|gate_up|down|qkv|wo|output'
F=/tmp/q/llama-8b.q4_k_m.gguf; [ -f /tmp/q/done ] || { q4km_start $B; q4km_wait; }
el generate; gen def X=1; gen ef $EF
for r in 1 2; do el "round $r"
  ea def-$r X=1; ea ef-$r $EF
  cb q4-def X=1 "--model $F" $r; cb q4-ef $EF "--model $F" $r
done
el bf16; cb bf16-def X=1 "--shapes llama-8b" 1; cb bf16-ef $EF "--shapes llama-8b" 1
el done; snap
