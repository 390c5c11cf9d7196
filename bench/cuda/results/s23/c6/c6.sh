#!/bin/bash
# Session 23, call C6: MhQ4K with each super-block's loads issued before the previous one is used
# (a variant cubin, RIGSCOPE_CUDA_PTX) against c4's kernels, Q4_K_M llama-8b, MH=16 and 8, alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c6.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c6/rigscope-cuda.xz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
gunzip -c carry/c6/v.cubin.gz > /tmp/v.cubin
mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el write; $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null || exit 1
cb() { n=$1; shift; timeout 100 env "$@" $B cuda-bench --model $F --steps 50 > $O/$n.txt 2>&1; echo "$n: $(grep -A1 '^shape' $O/$n.txt | tail -1)"; grep -E "^(gate_up|down|qkv|wo|output) " $O/$n.txt; }
for r in 1 2; do
  el "round $r"
  cb mh16-r$r RIGSCOPE_CUDA_MH=16; cb mh16v-r$r RIGSCOPE_CUDA_MH=16 RIGSCOPE_CUDA_PTX=/tmp/v.cubin
  [ $r = 1 ] && { cb mh8 RIGSCOPE_CUDA_MH=8; cb mh8v RIGSCOPE_CUDA_MH=8 RIGSCOPE_CUDA_PTX=/tmp/v.cubin; }
done
el done
