#!/bin/bash
# Session 30, call p8 (after p7): the eagle check (gocoder pair: acceptance = reference, output =
# greedy, plain against the k=4 chain on the engine path, and each graph's device time) with the
# attention's one-token twin on and off (RIGSCOPE_CUDA_ATTONE), alternating; then with fewer
# attention blocks per KV head (RIGSCOPE_CUDA_ATTS=4, 8: at gocoder's short contexts most of the
# default 32 sit idle), then the twin on and off again while time is left. Carry ["carry/p8"]: p7's
# cc.test.xz and m.tar.xz (gocoder-14m-hf, gocoder-14m-eagle3, reference-public.json).
. bench/cuda/call.sh; call_init p8; unpack carry/p8 cc.test; C=/tmp/cc.test
mkdir -p /tmp/m && tar xJf carry/p8/m.tar.xz -C /tmp/m
ea() { el "eagle $1"; env $2 timeout 140 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|FAIL" $O/x/eagle-$1.txt; }
ea one-1 RIGSCOPE_CUDA_ATTONE=1; ea gen-1 RIGSCOPE_CUDA_ATTONE=0
ea s4 RIGSCOPE_CUDA_ATTS=4; ea s8 RIGSCOPE_CUDA_ATTS=8
if left 420; then ea one-2 RIGSCOPE_CUDA_ATTONE=1; ea gen-2 RIGSCOPE_CUDA_ATTONE=0; fi
el done; snap
