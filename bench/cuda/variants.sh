#!/bin/sh
# Build here: PTX variants of kernels.cu for sm_90, each with its -D flags,
# into carry/ptx/NAME.ptx, for one device call of knobs.sh comparing them
# (RIGSCOPE_CUDA_PTX=carry/ptx/NAME.ptx loads one instead of the embedded PTX).
# Usage: sh bench/cuda/variants.sh 'u4:-DTC_U=4' 'ug2:-DTC_UG=2' ...
# The committed PTX as carry/ptx/head.ptx: git show HEAD:kernels/kernels_sm90.ptx.gz | gunzip.
set -eu
mkdir -p carry/ptx
export PATH="$PATH:/usr/lib/nvidia-cuda-toolkit/bin"
for v in "$@"; do
  name=${v%%:*}; flags=${v#*:}
  (cd kernels && nvcc -allow-unsupported-compiler -ptx -O3 -arch=compute_90 $flags -o ../carry/ptx/$name.ptx kernels.cu) &
done
wait
git show HEAD:kernels/kernels_sm90.ptx.gz | gunzip > carry/ptx/head.ptx
ls -la carry/ptx
