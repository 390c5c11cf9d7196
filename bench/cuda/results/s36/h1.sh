#!/bin/bash
# Session 36, call h1: the device suite (as s31/p1.sh: bench/cuda/suite.sh, TYPES q4_k_m q8_0) only
# on an H200. Carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"]; binary from main 8346283.
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$n"
case "$n" in *H200*) ;; *) echo "not an H200: the suite did not run"; exit 0 ;; esac
export BW=4.6e12
TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
