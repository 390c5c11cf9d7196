#!/bin/bash
# Session 37, call m6 (m5.sh, which no machine ran, plus the twins at T tokens): the images of
# MQK=auto, the one-token Q4_K + Q6_K qkv launch (mqkn1_*) and RIGSCOPE_CUDA_MQKT=1 (under MQK,
# products of 2..8 tokens on dp4a twins at T tokens, mqkt_*/mqkgt_*: lane c of a unit's 8 keeps
# token c's float chains, the integer sums meet by a halving exchange).
# (a) -checks quant -parts mqk: the kernel rows (u0: T=1 twin, T=2..8 mqkt, T>8 tensor cores, each
# T=k row bitwise its T=1 run), the product path (path, path1, auto, path1t, autot), the stack's
# one-token launches, and the timing table (u0 columns at T=2, 5, 8: mqkt); (b) cuda-bench
# Q4_K_M: default, MQK=8 and auto with and without the pair (RIGSCOPE_CUDA_MQN2=0), auto with
# MQKT, alternating, two rounds; (c) `generate` md5s: MQK=8 and auto must give m4's (1a16c92d...,
# dbaae87b...), MQN2=0 and MQKT the same as auto; (d) the peer agreement under auto with MQKT.
# Built from d3de513 on session 37's machine (branch s37; images regenerated with nvcc 11.8; the tree
# that landed keeps auto only: results/s37/README.md):
# go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; go build -tags
# 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .; xz'd into carry/m6 with
# carry/m4's peer.tar.xz. Carry ["carry/m6"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init m6; unpack carry/m6 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/peer && tar xJf carry/m6/peer.tar.xz -C /tmp/peer
q4km_start $B
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|rror|MQK|path1t|autot" $O/x/mqk.txt | head -30; grep -cE " ok ok$" $O/x/mqk.txt
grep -A60 "^plain products" $O/x/mqk.txt | grep -E "^type| [258] " | head -60; snap
bench() { el "bench round $1"; CB_KINDS="gate_up|down|qkv|wo|output|quantx|attention"
  cb def X=1 "--model $F" $1; cb auto RIGSCOPE_CUDA_MQK=auto "--model $F" $1; cb autot "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKT=1" "--model $F" $1
  cb auto-n0 "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQN2=0" "--model $F" $1; cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $1
  cb mqk8-n0 "RIGSCOPE_CUDA_MQK=8 RIGSCOPE_CUDA_MQN2=0" "--model $F" $1; snap; }
q4km_wait; bench 1
el generate; gen mqk8 RIGSCOPE_CUDA_MQK=8; gen auto RIGSCOPE_CUDA_MQK=auto; gen auto-n0 "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQN2=0"
gen autot "RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKT=1"; snap
el "peer autot"; env RIGSCOPE_CUDA_MQK=auto RIGSCOPE_CUDA_MQKT=1 timeout 120 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts peer -peer /tmp/peer -models /tmp/peer > $O/x/peer-autot.txt 2>&1; echo "rc $?"
grep -iE "agree|FAIL|rror" $O/x/peer-autot.txt | head -6
bench 2
el done; snap
