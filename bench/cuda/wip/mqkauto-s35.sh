#!/bin/bash
# Session 35's mqkauto-s35.patch, not yet run: RIGSCOPE_CUDA_MQK=auto, the Q8_K products' block
# shape per matrix (gpu/cuda/quant_mqk.go mqkShape, from results/s35 m1's kernel table: the GLU in
# 4 warps, wide Q6_K matrices in 4 warps with 2 super-blocks in flight past one token, square Q4_K
# ones with 2 past one token, the rest 8 warps). (a) -checks quant -parts mqk (its path tests gain
# "auto"); (b) -checks quant -parts peer with MQK=auto; (c) `generate` md5s, MQK=8 and auto;
# (d) cuda-bench Q4_K_M: default, MQK=8, MQK=auto, alternating, two rounds.
# Built on session 35's machine with the patch applied (no kernel change, main's images):
# go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; go build -tags
# 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .; xz'd into carry/m3 with
# carry/m1's peer.tar.xz. Run: move this script to results/sN, then carry ["carry/m3"] after
# `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init mqkauto; unpack carry/m3 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/peer && tar xJf carry/m3/peer.tar.xz -C /tmp/peer
q4km_start $B
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|rror|auto" $O/x/mqk.txt | head -20; grep -cE " ok ok$" $O/x/mqk.txt; snap
el peer; RIGSCOPE_CUDA_MQK=auto timeout 120 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts peer -peer /tmp/peer -models /tmp/peer > $O/x/peer-auto.txt 2>&1; echo "rc $?"; grep -iE "agree|FAIL|rror" $O/x/peer-auto.txt | head -6
q4km_wait; el generate; gen mqk8 RIGSCOPE_CUDA_MQK=8; gen auto RIGSCOPE_CUDA_MQK=auto
el bench; CB_KINDS="gate_up|down|wo|qkv|output|quantx"
for r in 1 2; do cb def X=1 "--model $F" $r; cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $r; cb auto RIGSCOPE_CUDA_MQK=auto "--model $F" $r; snap; done
el done; snap
