#!/bin/bash
# Session 34, call a1 (written in session 33 as its a2, which no machine came for): RIGSCOPE_CUDA_ATTOWN=1 (the batch-invariant attention's blocks own whole
# groups of 4 chunks whenever a step has more than one group, not only past S chunks: at ctx 512
# with chunks of 32, 4 busy blocks of 4 subchunks each and a merge over 4 group columns, against
# 16 busy blocks of one subchunk and a merge that builds the groups from 16 chunk columns) and
# ATTOWN=2 (also: a step of 2-4 chunks in one group is its owner's alone, merged without the
# blocks' handshake).
# Same arithmetic by design: the kv check's new plans 32/g4/own1 and own2 (verify rows against decode rows,
# bitwise), greedy and acceptance in the eagle check, and `generate` on the synthetic Q4_K_M
# llama-8b with and without it (the tokens must be equal). Then speed, alternating, two rounds:
# the gocoder EAGLE-3 check (cycle step, plain and EAGLE-3 tok/s) and cuda-bench on the 8B as
# Q4_K_M (bf16 one round; R=1: one round of each); the eagle check also with RIGSCOPE_CUDA_ATTS=16, 8, 4 (blocks per KV head,
# 32 by default for gocoder). Built here (main with the knob, images regenerated):
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .
#   xz both into carry/a4. Carry ["carry/a4", "carry/p5/m.tar.xz"], kernels/*.gz moved out.
. bench/cuda/call.sh; call_init attown; unpack carry/a4 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
q4km_start $B
el kv; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv.txt 2>&1; echo "rc $?"
grep -E "^(float32|bf16) |FAIL|rror" $O/x/kv.txt | head -30
for r in ${R:-1 2}; do ea def-$r X=1; ea own1-$r RIGSCOPE_CUDA_ATTOWN=1; ea own2-$r RIGSCOPE_CUDA_ATTOWN=2; done
left 100 && for s in 8 4; do ea s$s RIGSCOPE_CUDA_ATTS=$s; done  # S (no change to the bits): fewer blocks per KV head
q4km_wait
el generate; gen def X=1; gen own1 RIGSCOPE_CUDA_ATTOWN=1; gen own2 RIGSCOPE_CUDA_ATTOWN=2
for r in ${R:-1 2}; do el "round $r"
  cb q4-def X=1 "--model $F" $r; cb q4-own1 RIGSCOPE_CUDA_ATTOWN=1 "--model $F" $r; cb q4-own2 RIGSCOPE_CUDA_ATTOWN=2 "--model $F" $r
  [ $r = 1 ] && cb q4-s8 RIGSCOPE_CUDA_ATTS=8 "--model $F" $r  # 8 blocks per KV head: at ctx 512 the blocks own whole groups as with own1
  left 200 && [ $r = 1 ] && { cb bf16-def X=1 "--shapes llama-8b" $r; cb bf16-own1 RIGSCOPE_CUDA_ATTOWN=1 "--shapes llama-8b" $r; }
done
el done; snap
