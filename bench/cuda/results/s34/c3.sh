#!/bin/bash
# Session 34, call c3: c2.sh cut to what a short call can hold (device time nearly spent): the
# attention in clusters (RIGSCOPE_CUDA_ATTCLUSTER=8, 4; 8 with RIGSCOPE_CUDA_ATTFOLD=1) against the default and the previous
# images (RIGSCOPE_CUDA_PTX=/tmp/old.cubin). Bits: -checks kv (plans cl4, cl8, cl8f), `generate` tokens
# on the synthetic 8B Q4_K_M. Speed: cuda-bench Q4_K_M (ctx 512), alternating, two rounds.
# Not run in session 34 (no machine came); built as c2.sh says, from bench/cuda/wip/attncluster-s34.patch.
# Carry ["carry/a5", "carry/c3"] (c3: the previous commit's kernels_sm90.cubin, xz), after
# `sh bench/cuda/aside.sh out` (and `in` afterwards).
. bench/cuda/call.sh; call_init c3; unpack carry/a5 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
unpack carry/c3 old.cubin; chmod -x /tmp/old.cubin
q4km_start $B
OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin; CL8=RIGSCOPE_CUDA_ATTCLUSTER=8; CL4=RIGSCOPE_CUDA_ATTCLUSTER=4; CL8F="RIGSCOPE_CUDA_ATTCLUSTER=8 RIGSCOPE_CUDA_ATTFOLD=1"
el kv; timeout 100 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv.txt 2>&1; echo "rc $?"
grep -E "^(float32|bf16) |^ctx|^[0-9]+ |FAIL|rror" $O/x/kv.txt | head -40; snap
q4km_wait
for r in 1 2; do el "q4_k_m round $r"; cb q4-old $OLD "--model $F" $r; cb q4-def X=1 "--model $F" $r; cb q4-cl8 $CL8 "--model $F" $r; cb q4-cl4 $CL4 "--model $F" $r; cb q4-cl8f "$CL8F" "--model $F" $r; snap
  [ $r = 1 ] && { el generate; gen def X=1; gen cl8 $CL8; gen cl8f "$CL8F"; gen old $OLD; snap; }
done
el done; snap
