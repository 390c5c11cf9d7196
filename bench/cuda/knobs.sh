#!/bin/sh
# One device call: cuda-bench under several knob settings, for comparisons
# in the same call (the machine is shared and noisy: compare only within a call).
# VARIANTS is a ';'-separated list of space-separated VAR=value settings
# ('-' for none), e.g. VARIANTS='-;RIGSCOPE_CUDA_PDL=0;RIGSCOPE_CUDA_RT=down:v'.
# CHECK=1 runs the kernel checks (the cuda-check test binary, -checks kernels) under each
# setting first. Carry ["carry/rigscope-cuda.gz"] (and "carry/cuda-check.test.gz" with CHECK=1)
# (BINGZ names another gzipped binary, e.g. a build of the previous version).
set -u
gunzip -c ${BINGZ:-carry/rigscope-cuda.gz} > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
if [ "${CHECK:-0}" = 1 ]; then gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test; fi
O=${OUT:-/tmp/out}; mkdir -p "$O"
i=0
echo "$VARIANTS" | tr ';' '\n' | while read -r v; do
  i=$((i + 1))
  [ "$v" = - ] && v=
  if [ "${CHECK:-0}" = 1 ]; then
    env $v timeout 120 /tmp/cuda-check.test -test.run TestCUDACheck -checks kernels > "$O/check${TAG:-}_$i.txt" 2>&1
    echo "== $i: ${v:-default}: cuda-check rc $?, $(grep -c ' ok$' "$O/check${TAG:-}_$i.txt") ok"; grep -v ' ok$' "$O/check${TAG:-}_$i.txt" | tail -3
  fi
  env $v timeout ${T_BENCH:-150} $B cuda-bench ${BENCH_ARGS:-} > "$O/bench${TAG:-}_$i.txt" 2>&1
  echo "== $i: ${v:-default}"; grep -E '^(llama|# knob)' "$O/bench${TAG:-}_$i.txt" | grep -v '^## '; grep -E 'total' "$O/bench${TAG:-}_$i.txt" | sed 's/.*: one ungraphed step at [0-9]* cached, per kernel kind (events around each launch);//'
done
