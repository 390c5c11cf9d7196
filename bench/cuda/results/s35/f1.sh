#!/bin/bash
# Session 35, call f1 (one call for two things: the device budget had room for one more start): the
# images to land, against main's (old: 9efcb35's sm_90 cubin through RIGSCOPE_CUDA_PTX).
# New: ATTOWN and the evict-first build removed (c2: both slower), the Q8_K products' one-token
# twins (m1), and the Q8_K products quantizing their own outputs (kernels/quant_mqk.cu
# MqkIO.quant_out: the last block of each 256-row group writes Q8_K of out * g with the sums of
# squares of out per 256 into the next product's buffer, which applies its norm at its finish), so
# that under RIGSCOPE_CUDA_MQK only wo's x and the first qkv's take a qk_x launch.
# (a) -checks kv (the default attention after the removal); -checks quant -parts mqk (the twins,
# the fused quantization bitwise against Q8_K of the downloaded out * g, its consumer bitwise alone
# and at T=16); (b) -checks quant -parts peer, MQK=8 and the default; (c) `generate` md5s, new and
# old; (d) cuda-bench Q4_K_M: new, old, MQK=8, MQK=4, alternating, two rounds.
# Built here from the landed tree with q8kout.patch applied (images regenerated, nvcc 11.8): go test -c -tags 'cuda cubinonly' -ldflags='-s -w'
# -o /tmp/cc.test ./gpu/cuda; go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o
# /tmp/rigscope-cuda .; xz'd into carry/f1 with old.cubin and carry/m1's peer.tar.xz.
# Carry ["carry/f1"], after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init f1; unpack carry/f1 cc.test rigscope-cuda old.cubin; C=/tmp/cc.test; B=/tmp/rigscope-cuda
chmod -x /tmp/old.cubin; mkdir -p /tmp/peer && tar xJf carry/f1/peer.tar.xz -C /tmp/peer
q4km_start $B; OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin
el kv; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv.txt 2>&1; echo "rc $?"
grep -E "^(float32|bf16) |FAIL|rror" $O/x/kv.txt | head -30
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|rror|fused|consumer|^q[46]k" $O/x/mqk.txt | head -30; grep -cE " ok ok$" $O/x/mqk.txt; snap
el peer; for k in 8 0; do RIGSCOPE_CUDA_MQK=$k timeout 120 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts peer -peer /tmp/peer -models /tmp/peer > $O/x/peer-$k.txt 2>&1; echo "MQK=$k rc $?"; grep -iE "agree|FAIL|rror" $O/x/peer-$k.txt | head -6; done; snap
q4km_wait; el generate; gen new X=1; gen old $OLD; gen mqk8 RIGSCOPE_CUDA_MQK=8; gen mqk8-tc "RIGSCOPE_CUDA_MQK=8 RIGSCOPE_CUDA_MQK1=0"
el bench; CB_KINDS="gate_up|down|wo|qkv|output|quantx|attention"
for r in 1 2; do cb new X=1 "--model $F" $r; cb old $OLD "--model $F" $r; cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $r; cb mqk4 RIGSCOPE_CUDA_MQK=4 "--model $F" $r; snap; done
el done; snap
