#!/bin/bash
# Session 37, call m7: the Q6_K tensor-core products' loads (kernels/quant_mqk.cu mqk6_load: a
# row's 4 lanes load the super-block's aligned 8-byte words once, 7 loads a row instead of 21,
# and pass the straddling words on by width-4 shuffles), against main's images (old: ea01531's
# sm_90 cubin through RIGSCOPE_CUDA_PTX). (a) -checks quant -parts mqk with the new images (the
# Q6_K rows bitwise across T, the timing table's Q6_K rows); (b) `generate` md5s under MQK=auto,
# new and old (must be m6's dbaae87b...); (c) cuda-bench Q4_K_M: auto new and old, MQK=8 new and
# old, the default, alternating, two rounds.
# Built from branch s37q6 on session 37's machine (images regenerated with nvcc 11.8):
# go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; go build -tags
# 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .; xz'd into carry/m7 with
# main's kernels_sm90.cubin as old.cubin. Carry ["carry/m7"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init m7; unpack carry/m7 cc.test rigscope-cuda old.cubin; C=/tmp/cc.test; B=/tmp/rigscope-cuda
chmod -x /tmp/old.cubin; OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin
q4km_start $B
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|rror" $O/x/mqk.txt | head -20; grep -cE " ok ok$" $O/x/mqk.txt
grep -A60 "^plain products" $O/x/mqk.txt | grep -E "^type|^Q6_K" | head -30; snap
q4km_wait; el generate; gen auto RIGSCOPE_CUDA_MQK=auto; gen auto-old "RIGSCOPE_CUDA_MQK=auto $OLD"; gen mqk8 RIGSCOPE_CUDA_MQK=8; snap
for r in 1 2; do el "bench round $r"; CB_KINDS="gate_up|down|qkv|wo|output"
  cb auto RIGSCOPE_CUDA_MQK=auto "--model $F" $r; cb auto-old "RIGSCOPE_CUDA_MQK=auto $OLD" "--model $F" $r
  cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $r; cb mqk8-old "RIGSCOPE_CUDA_MQK=8 $OLD" "--model $F" $r; cb def X=1 "--model $F" $r; snap; done
el done; snap
