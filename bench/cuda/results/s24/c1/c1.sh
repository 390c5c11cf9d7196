#!/bin/bash
# Session 24, call C1: where a Q4_K_M decode step's time goes in the graph (llama-8b, ctx 512).
#  1. cuda-bench --model default, then each kind launched twice (RIGSCOPE_CUDA_TWICE=kind): the
#     kind's marginal graphed cost; attention plans (ATTCHUNK 64/128/0, ATTS 8).
#  2. ncu: each kernel node of graphed steps (serialized), durations (its csv did not come back:
#     more than 8 files under $OUT).
# Build here: go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/c1/rigscope-cuda . && xz -T2 -6 -f carry/c1/rigscope-cuda
# Run there: bash carry/c1/c1.sh   (carry ["carry/c1"])
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv
xz -dc carry/c1/rigscope-cuda.xz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el "write q4_k_m"; $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null
cb() { local tag=$1; shift; timeout 80 env "$@" $B cuda-bench --model $F --steps 50 > $O/cb-$tag.txt 2>&1
  echo "$tag: $(grep -A1 '^shape' $O/cb-$tag.txt | tail -1 | awk '{print "tok/s", $6, "verify/decode", $8, "us/step", $NF-0, $(NF-1)}')"; }
el "cuda-bench"
cb base RIGSCOPE_CUDA_MH=0
grep -E "^## .*ungraphed|^(qkv|wo|gate_up|down|quantx|attention|output|embed|argmax) " $O/cb-base.txt
for k in attention gate_up down qkv wo output; do left 330 || break; cb twice-$k RIGSCOPE_CUDA_TWICE=$k; done
for c in 64 128 0; do left 360 || break; cb chunk$c RIGSCOPE_CUDA_ATTCHUNK=$c; done
left 380 && cb atts8 RIGSCOPE_CUDA_ATTS=8
left 390 && cb base2 RIGSCOPE_CUDA_MH=0
el "ncu"
if left 420; then
  timeout 150 ncu --clock-control none --graph-profiling node --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread -c 700 $B cuda-bench --model $F --steps 2 > $O/ncu.csv 2> $O/ncu.err; echo "rc $?"
  tail -3 $O/ncu.err; wc -l $O/ncu.csv
fi
el done
