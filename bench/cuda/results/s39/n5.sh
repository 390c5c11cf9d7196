#!/bin/bash
# The kernels and knobs it measures are not in main: results/s39/seq.patch holds them (apply it
# to rebuild the images and binaries). cc.test also needs -bwtall (in main since this session).
# Session 39, call n5: the sequential Q4_K GLUs (kernels/quant_mv.cu MQ_MQGS, mq_body SEQ; gpu/cuda
# mqwEntries q4glu8s, q4glu4s). n4's -bwtall rows put the GLU's loss in its steady state (2490 GB/s
# against the output matrix's 2870), not in a launch's fixed cost: its 8 row streams (gate and up,
# 4 rows each) are loaded just before use, where every non-GLU product loads the next unit of its
# rows at the loop's bottom. SEQ loads a warp's rows 4 at a time, the gate's then the up's, each
# row's next unit issued right after its decode: w8s (8 warps of 4 rows, 80 registers, 3 blocks an
# SM) and w4s (4 warps of 8 rows in passes of 4, 128 registers, 4 blocks an SM). A row sums as in
# w8, so the bits must be equal.
# In the order run: (b); then, for the faster of the two at gate_up: (c), (d), (a).
# (a) -checks quant -parts kernels under each (the fused rows compare the wide GLU's output and its
# quantized scratch with the default kernels', bitwise); (b) the bandwidth table with -bwtall=4,
# main's embedded image and seq.cubin under each; (c) `generate` md5 (must be equal); (d) cuda-bench
# Q4_K_M, alternating, two rounds.
# carry/n5: cc.test.xz, rigscope-cuda.xz (this session's Go code, main's embedded image) and
# seq.cubin.xz (nvcc 11.8 sm_90 ptx of this session's kernels, then ptxas). Carry ["carry/n5"]
# after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n5; unpack carry/n5 cc.test rigscope-cuda seq.cubin; chmod -x /tmp/seq.cubin
C=/tmp/cc.test; B=/tmp/rigscope-cuda
P=RIGSCOPE_CUDA_PTX=/tmp/seq.cubin; REST=q4add32,q80add32,q40glu8,q40add16
W8="$P RIGSCOPE_CUDA_MQW=q4glu8s,$REST"; W4="$P RIGSCOPE_CUDA_MQW=q4glu4s,$REST"
q4km_start $B
chk() { el "checks $1"; timeout 150 env $2 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts kernels > $O/x/chk-$1.txt 2>&1; echo "rc $?"
  grep -E "FAIL|rror" $O/x/chk-$1.txt | head -10; grep -cE " ok" $O/x/chk-$1.txt; grep -E "^fused|glu" $O/x/chk-$1.txt | head -12; }
bw() { el "bandwidth $1"; timeout 100 env $2 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -bwtypes=Q4_K -bwsweep=false -bwmma=false -bwtall=4 > $O/x/bw-$1.txt 2>&1; echo "rc $?"
  grep -E "gate_up.*pdl \(" $O/x/bw-$1.txt; }
bw main X=1; bw w8s "$W8"; bw w4s "$W4"; snap
# The faster at gate_up T=1 (pdl) goes on; main's image is SASS-identical to seq.cubin's
# for every kernel but the two new ones (cuobjdump -sass, this machine).
us() { grep -E "^Q4_K +gate_up 2x14336x4096 +T=1 .*pdl" $O/x/bw-$1.txt | head -1 | sed -E 's/.* ([0-9.]+) us pdl.*/\1/'; }
if awk "BEGIN{exit !($(us w8s) <= $(us w4s))}"; then N=w8s; W="$W8"; else N=w4s; W="$W4"; fi; echo "on: $N"
q4km_wait; el generate; gen main X=1; gen $N "$W"; snap
CB_KINDS="gate_up|down|attention"
for r in 1 2; do el "bench round $r"; cb main X=1 "--model $F" $r; cb $N "$W" "--model $F" $r; snap; done
chk $N "$W"
el done; snap
