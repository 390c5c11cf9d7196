#!/bin/bash
# Session 41: t2.sh first on any card; on an H200 the next call on the warm machine (marker
# /tmp/s41-t2) runs the owed suite with TYPES q4_k_m alone (the device budget left no room for
# q8_0 too). Carry ["carry/t2", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] after
# `KEEP=s41 sh bench/cuda/aside.sh out`.
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
if [[ "$n" == *H200* && -f /tmp/s41-t2 ]]; then
  echo "$n: the suite"; export BW=4.6e12
  TYPES="q4_k_m" sh bench/cuda/suite.sh
else
  touch /tmp/s41-t2; bash bench/cuda/results/s41/t2.sh
fi
