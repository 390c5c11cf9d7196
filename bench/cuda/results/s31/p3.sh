#!/bin/bash
# Session 31, call p3 (after p2): cuda-bench on the synthetic llama-8b as Q4_K_M and in bf16 with
# the attention's pipelined merge and RoPE tables loaded before pdl_wait (new: the embedded
# images), the merge alone (mid: RIGSCOPE_CUDA_PTX=mid cubin) and s30's images (old), alternating,
# two rounds. Built here: go build -tags 'headless cuda cubinonly'
# -ldflags='-s -w' -o /tmp/rigscope-cuda . and xz into carry/p3; old.cubin.gz as p2's; mid.cubin.gz
# is the sm_90 cubin with the merge alone (regenerated from attn_fixed.cu without the RoPE hoist).
# Carry ["carry/p3"].
. bench/cuda/call.sh; call_init p3; unpack carry/p3 rigscope-cuda; B=/tmp/rigscope-cuda
gunzip -c carry/p3/old.cubin.gz > /tmp/old.cubin; gunzip -c carry/p3/mid.cubin.gz > /tmp/mid.cubin
q4km_start $B; q4km_wait
cb() { timeout 60 env $2 $B cuda-bench $3 --steps 50 > $O/x/cb-$1-$4.txt 2>&1; echo "$1 round $4: $(row $O/x/cb-$1-$4.txt)"; grep -E "^attention " $O/x/cb-$1-$4.txt; }
for r in 1 2; do el "round $r"
  cb q4-new X=1 "--model $F" $r; cb q4-mid RIGSCOPE_CUDA_PTX=/tmp/mid.cubin "--model $F" $r
  cb q4-old RIGSCOPE_CUDA_PTX=/tmp/old.cubin "--model $F" $r
  cb bf16-new X=1 "--shapes llama-8b" $r; cb bf16-old RIGSCOPE_CUDA_PTX=/tmp/old.cubin "--shapes llama-8b" $r
done
el done; snap
