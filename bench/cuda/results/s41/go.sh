#!/bin/bash
# Session 41, call g1: on an H200 the owed suite (as s36/h1.sh: bench/cuda/suite.sh, TYPES
# "q4_k_m q8_0", main's default binary built from 3a9dbb0); on any other card v4.sh (XPRE for
# Q4_0 and Q5_K) and then the attention plans on the Q4_K_M llama-8b (cuda-bench, main's binary:
# the default fixed chunks, the flat merge ATTGROUP=1, the split by length ATTCHUNK=0; two rounds
# alternating), which bound what a faster batch-invariant decode attention can take off a step.
# Carry ["carry/v4", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] after
# `KEEP=s41 sh bench/cuda/aside.sh out`.
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
if [[ "$n" == *H200* ]]; then
  echo "$n: the suite"; export BW=4.6e12
  TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
  exit
fi
OUT0=${OUT:-/tmp/out}
OUT=$OUT0/v4 bash bench/cuda/results/s41/v4.sh
. bench/cuda/call.sh; OUT=$OUT0; call_init g1
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
B=/tmp/rigscope-cuda; q4km_start $B; q4km_wait
for r in 1 2; do left 420 || break; el "attention plans, round $r"
  cb def X=1 "--model $F" $r; cb flat RIGSCOPE_CUDA_ATTGROUP=1 "--model $F" $r; cb len RIGSCOPE_CUDA_ATTCHUNK=0 "--model $F" $r; snap
done
el end; snap
