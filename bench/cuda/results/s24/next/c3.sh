#!/bin/bash
# Session 24, call C3 (the last 5 device minutes): v (attn_fixed's tail block loads its cached slots
# before pdl_wait; the grouped merge loads up to 4 groups at once) against main's kernels:
# cuda-bench --shapes llama-8b (bf16, synthetic), then -checks kv (kv rows: verify rows and slots
# bitwise decode's, every fixed plan), then cuda-bench again.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c3.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
nvidia-smi --query-gpu=name --format=csv,noheader
C=carry/c3
xz -dc $C/rigscope-cuda.xz > /tmp/rigscope-cuda & xz -dc $C/cc.test.xz > /tmp/cc & xz -dc $C/v.cubin.xz > /tmp/v.cubin & wait
chmod +x /tmp/rigscope-cuda /tmp/cc; B=/tmp/rigscope-cuda; V=RIGSCOPE_CUDA_PTX=/tmp/v.cubin
cb() { local tag=$1; shift; timeout 40 env "$@" $B cuda-bench --shapes llama-8b --steps 50 > $O/cb-$tag.txt 2>&1
  echo "$tag: $(grep -A1 '^shape' $O/cb-$tag.txt | tail -1)"; }
el "cuda-bench llama-8b bf16"; cb base1 RIGSCOPE_CUDA_MH=0; cb v-1 $V
grep -E "^attention" $O/cb-base1.txt $O/cb-v-1.txt
el "kv rows, v"; timeout 60 env $V /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/kv.txt 2>&1; echo "exit $?"; grep -E "^(f32|bf16) |FAIL|panic|^attention" $O/kv.txt | head -24
el "cuda-bench, round 2"; cb base2 RIGSCOPE_CUDA_MH=0; cb v-2 $V
el done
