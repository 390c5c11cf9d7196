#!/bin/bash
# Session 41: on an H200 the owed suite first (marker /tmp/s41-suite); then, or on any other card,
# t2.sh. Carry ["carry/t2", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] after
# `KEEP=s41 sh bench/cuda/aside.sh out`.
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
if [[ "$n" == *H200* && ! -f /tmp/s41-suite ]]; then
  touch /tmp/s41-suite; echo "$n: the suite"; export BW=4.6e12
  TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
else
  bash bench/cuda/results/s41/t2.sh
fi
