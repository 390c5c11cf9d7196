#!/bin/bash
# Session 36, call m4: bench/cuda/wip/mqkx-s36.patch: session 35's RIGSCOPE_CUDA_MQK=auto (the Q8_K products'
# block shape per matrix) and this session's RIGSCOPE_CUDA_MQKX=1 (the one-token twins quantize x
# in their prologue, mqk1x_*: no qk_x launch in a decode step) and the one-token launch of a
# Q4_K + Q6_K qkv stack (mqkn1_*, mqkn1x_*; off with RIGSCOPE_CUDA_MQN2=0), all under MQK.
# (a) -checks quant -parts mqk (paths path, path1, auto, path1x, autox: each T=k row bitwise its
# T=1 run; the stack: each one-token launch bitwise token 0 of T=5); (b) -checks quant -parts peer
# with MQK=auto and auto+X; (c) `generate` md5s (X and the pair must not move them); (d)
# cuda-bench Q4_K_M: default, MQK=8, auto, auto+X, auto+X without the pair, alternating, two rounds
# (round 1 right after the check, so that a call cut short still answers the speed question).
# Built from main with bench/cuda/wip/mqkx-s36.patch applied and the images regenerated (branch s36
# on session 36's machine):
# go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; go build -tags
# 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .; xz'd into carry/m4 with
# carry/m1's peer.tar.xz. Carry ["carry/m4"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init m4; unpack carry/m4 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/peer && tar xJf carry/m4/peer.tar.xz -C /tmp/peer
q4km_start $B
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|rror|path|auto|MQK" $O/x/mqk.txt | head -70; grep -cE " ok ok$" $O/x/mqk.txt; snap
bench() { el "bench round $1"; CB_KINDS="gate_up|down|wo|qkv|output|quantx"
  cb def X=1 "--model $F" $1; cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $1; cb auto RIGSCOPE_CUDA_MQK=auto "--model $F" $1
  cb autox "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKX=1" "--model $F" $1; cb autox-n0 "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKX=1 RIGSCOPE_CUDA_MQN2=0" "--model $F" $1; snap; }
q4km_wait; bench 1
el generate; gen mqk8 RIGSCOPE_CUDA_MQK=8; gen auto RIGSCOPE_CUDA_MQK=auto; gen autox "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKX=1"; gen autox-n0 "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKX=1 RIGSCOPE_CUDA_MQN2=0"; snap
for e in auto autox; do
  el "peer $e"; X=; [ $e = autox ] && X=RIGSCOPE_CUDA_MQKX=1
  env RIGSCOPE_CUDA_MQK=auto $X timeout 120 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts peer -peer /tmp/peer -models /tmp/peer > $O/x/peer-$e.txt 2>&1; echo "rc $?"; grep -iE "agree|FAIL|rror" $O/x/peer-$e.txt | head -6
done
bench 2
el done; snap
