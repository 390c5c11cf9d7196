#!/bin/bash
# Session 23, call C5 (after c4): what mh_x costs inside the graphed step, and verify / decode with
# RIGSCOPE_CUDA_MH for the other file types. cuda-bench --model on llama-8b Q4_K_M with MH=16 and
# RIGSCOPE_CUDA_SKIP=quantx (mh_x left out: garbage numerics, the step's time without it) beside MH=16;
# Q4_0 default against MH=16; Q8_0 with MH=8. Carry: carry/c4 (rigscope-cuda.xz) and this script.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c5.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c4/rigscope-cuda.xz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
mkdir -p /tmp/q
cb() { f=$1; shift; timeout 100 env "$@" $B cuda-bench --model /tmp/q/llama-8b.$f.gguf --steps 50; }
row() { grep -A1 "^shape" $1 | tail -1; grep -E "^(gate_up|down|quantx|qkv|wo|output) " $1; }
for t in q4_k_m q4_0 q8_0; do
  el "write $t"; $B write-gguf --model synthetic:llama-8b --type $t --out /tmp/q/llama-8b.$t.gguf > /dev/null || exit 1
done
el "q4_k_m MH=16 without mh_x"; cb q4_k_m RIGSCOPE_CUDA_MH=16 RIGSCOPE_CUDA_SKIP=quantx > $O/q4km-mh16-skipx.txt 2>&1; row $O/q4km-mh16-skipx.txt
el "q4_k_m MH=16"; cb q4_k_m RIGSCOPE_CUDA_MH=16 > $O/q4km-mh16.txt 2>&1; row $O/q4km-mh16.txt
el "q4_0 default"; cb q4_0 RIGSCOPE_CUDA_MH=0 > $O/q40-mh0.txt 2>&1; row $O/q40-mh0.txt
el "q4_0 MH=16"; cb q4_0 RIGSCOPE_CUDA_MH=16 > $O/q40-mh16.txt 2>&1; row $O/q40-mh16.txt
el "q8_0 MH=8"; cb q8_0 RIGSCOPE_CUDA_MH=8 > $O/q80-mh8.txt 2>&1; row $O/q80-mh8.txt
el done
