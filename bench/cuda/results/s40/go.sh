#!/bin/bash
# Session 40: one entry for the calls of this session, whichever card comes. On an H200 the
# owed suite runs first (s36/h1.sh: bench/cuda/suite.sh, TYPES "q4_k_m q8_0", main's default
# binary), and v1.sh in the next call on the same warm machine (marker /tmp/s40-suite); on any
# other card v1.sh runs.
# Carry ["carry/v1", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] after
# `KEEP=s40 sh bench/cuda/aside.sh out` (rigscope-cuda.gz: `go build -tags 'headless cuda
# cubinonly' -ldflags='-s -w'` of main, gzipped; llamacpp-cuda: ../shared/peers/llamacpp-cuda).
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
if [[ "$n" == *H200* && ! -f /tmp/s40-suite ]]; then
  touch /tmp/s40-suite; echo "$n: the suite"; export BW=4.6e12
  TYPES="q4_k_m q8_0" bash bench/cuda/suite.sh
else
  bash bench/cuda/results/s40/v1.sh
fi
