#!/bin/bash
# Session 33, call a1: session 32's attnchain-s32.patch on the device (written in session 32; no machine
# came): the attention's chain twin (_ch kernels, kernels/attn_fixed.cu CHAIN) for a speculative
# cycle's verify, where the table of which new token a row sees and the two-pass subchunks fold
# away. One image: the eagle check (gocoder pair, k=4 chain) with the twin (default) against
# RIGSCOPE_CUDA_ATTCHAIN=0 (the general kernel), alternating, two rounds (the cycle step and the
# EAGLE-3 tok/s show it; the check's graph rows replay the verify outside the cycle, on the
# general kernel); then -checks kv, whose chain cases verify on the twin (rows against decode
# rows, bitwise). Build here: git apply bench/cuda/wip/attnchain-s32.patch; cd kernels && go
# generate; go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; xz
# into carry/a3 (this machine's carry/a3 holds it built on da1242d). m.tar.xz is s31's. Carry
# ["carry/a3", "carry/p5/m.tar.xz"] with kernels/*.gz moved out of the tree. Then main's
# RIGSCOPE_CUDA_AMBLOCKS (the argmax kernels' blocks per row; 32 by default) at 8, 4, 2 and 1
# against 32: the argmax's cost at gocoder's 4096-token vocabulary (results/s32 a1: 6.3 us).
. bench/cuda/call.sh; call_init a3; unpack carry/a3 cc.test; C=/tmp/cc.test
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|FAIL|rror" $O/x/eagle-$1.txt | head -8; }
for r in 1 2; do ea ch-$r X=1; ea gen-$r RIGSCOPE_CUDA_ATTCHAIN=0; done
for b in 8 4 2 1; do ea am$b RIGSCOPE_CUDA_AMBLOCKS=$b; done; ea am32 X=1
el kv; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv.txt 2>&1; echo "rc $?"
grep -E "differ|FAIL|rror" $O/x/kv.txt | head -20; tail -3 $O/x/kv.txt
el done; snap
