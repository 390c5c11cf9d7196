#!/bin/bash
# Session 20, call D9: RIGSCOPE_CUDA_ATTROWS=4 on the llama-8b bf16 shape (cuda-bench), alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d9.txt) 2>&1
gunzip -c carry/rigscope-cuda.gz > /tmp/r && chmod +x /tmp/r
cb() { local n=$1; shift; env "$@" timeout 100 /tmp/r cuda-bench --shapes llama-8b,llama-1b --tp 1 > $O/$n.txt 2>&1; echo "$n exit $?:"; grep -E '^ *llama-(8b|1b) ' $O/$n.txt | head -2; }
for r in 1 2; do cb def$r X=1; cb rows4-$r RIGSCOPE_CUDA_ATTROWS=4; done
