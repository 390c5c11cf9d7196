#!/bin/bash
# Session 20, call D5: FP8 llama-8b cuda-bench, main before the mf8_finish refactor (old) against
# after (new), alternating; then the quantized table against llama.cpp CUDA (Q8_0, Q4_0).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d5.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/d4old/rigscope-old.xz > /tmp/rigscope-old && chmod +x /tmp/rigscope-old
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-new && chmod +x /tmp/rigscope-new
cb() { local n=$1 b=$2; shift 2; timeout 100 /tmp/$b cuda-bench --shapes llama-8b --tp 1 "$@" > $O/$n.txt 2>&1; echo "$n exit $?: $(grep -E '^ *llama-8b' $O/$n.txt | head -1)"; }
el f8; for r in 1 2; do cb f8-old$r rigscope-old --dtype f8_e4m3; cb f8-new$r rigscope-new --dtype f8_e4m3; done
el quant; TYPES="${TYPES:-q8_0 q4_0}" sh bench/cuda/quant.sh 2>&1 | tail -12
el done
