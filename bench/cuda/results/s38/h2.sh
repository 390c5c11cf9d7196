#!/bin/bash
# Session 38, call h2: the device suite (bench/cuda/suite.sh, TYPES "q4_k_m q8_0": the product path
# beside cuda-bench, then llama.cpp CUDA built in the same call against `generate --device cuda` on
# the same GGUF files, alternating, two rounds) on whichever card the call gets (the H200 suite
# has been owed since session 31; on an H100 it is the same table on that card, BW its read
# bandwidth), after cuda-bench on the synthetic FP8 llama-8b (issue 23's FP8 share of the bound).
# Carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] (main's default path: the binary built
# with `go build -tags 'headless cuda cubinonly' -ldflags='-s -w'` from 7c38a3e, whose default
# path 2e128ad's is).
n=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$n"
case "$n" in *H200*) export BW=4.6e12 ;; *) export BW=3.04e12 ;; esac
O=${OUT:-/tmp/out}; mkdir -p $O; gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-fp8 && chmod +x /tmp/rigscope-fp8
for r in 1 2; do timeout 90 /tmp/rigscope-fp8 cuda-bench --dtype f8_e4m3 --shapes llama-8b --steps 50 > $O/fp8-$r.txt 2>&1
  echo "fp8 round $r: $(grep -A1 '^shape' $O/fp8-$r.txt | tail -1)"; done
head -1 $O/fp8-1.txt
TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
