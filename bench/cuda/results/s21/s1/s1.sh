#!/bin/bash
# Session 21, call S1: the checks not run after 4 query rows per attention block became the
# default (kv, models, eagletree, sample), the eagle check (engine path), then the device suite
# (product.sh + quant.sh bf16 with llama.cpp CUDA built in the background meanwhile).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/s1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
(bash carry/llamacpp-cuda/build.sh > "$O/llama-build.txt" 2>&1; echo "build exit $? after $(( $(date +%s) - t0 )) s" >> "$O/llama-build.txt") &
xz -dc carry/s1/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/s1/m.tar.xz" | tar xf -); M=/tmp
cc() { timeout ${TO:-150} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL|rror" "$@" | head -8; }
el checks; cc -checks models,eagletree,sample,kv -models $M > $O/rest.txt 2>&1; echo "exit $?"; bad $O/rest.txt; grep -E "^--- |12/12|differ|trees" $O/rest.txt | head -14
el eagle; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?: $(grep -hE '^cuda  ' $O/eagle.txt)"; grep -hE "^  draft |^graphs" $O/eagle.txt
el product; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$O/gpu.txt" 2>&1
SPEC=0 ROUNDS=2 sh bench/cuda/product.sh > "$O/product.txt" 2>&1; tail -12 $O/product.txt
el wait; wait; tail -1 "$O/llama-build.txt"
el quant; TYPES=bf16 sh bench/cuda/quant.sh > "$O/quant.txt" 2>&1; tail -6 $O/quant.txt
el done
