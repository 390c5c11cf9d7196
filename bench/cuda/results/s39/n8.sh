#!/bin/bash
# Session 39, call n8 (written for the next session, not run): the sequential GLU under 64
# registers. results/s39/seq2.patch = seq.patch + SeqRaw: a Q4_K row's 16-byte header is loaded as
# one word by each of the 8 lanes of its super-block and assembled by shuffles at decode, so a row
# holds 5 registers in flight, not 8. ptxas: w8s 64 registers with 24 bytes of spills (loop
# bookkeeping, not the sums; n6's had 56, the sums), 4 blocks an SM (one wave for the GLU's 448);
# w4s 96 registers, 5 blocks an SM. (a) the bandwidth table with -bwtall=4: main's embedded image
# (twice) against seq2.cubin under q4glu8s and q4glu4s; then for the faster of the two, only if it
# beats main at gate_up T=1 (pdl): (b) -checks quant -parts kernels (the fused rows: bitwise equal
# to the default kernels), (c) `generate` md5 (must be equal), (d) cuda-bench Q4_K_M, alternating,
# two rounds.
# carry/n8: cc.test.xz and rigscope-cuda.xz (n5's: this session's Go code with seq.patch's
# mqwEntries, main's embedded image) and seq2.cubin.xz (nvcc 11.8 sm_90 ptx of main's kernels with
# seq2.patch, then ptxas). Carry ["carry/n8"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n8; unpack carry/n8 cc.test rigscope-cuda seq2.cubin; chmod -x /tmp/seq2.cubin
C=/tmp/cc.test; B=/tmp/rigscope-cuda
P=RIGSCOPE_CUDA_PTX=/tmp/seq2.cubin; REST=q4add32,q80add32,q40glu8,q40add16
W8="$P RIGSCOPE_CUDA_MQW=q4glu8s,$REST"; W4="$P RIGSCOPE_CUDA_MQW=q4glu4s,$REST"
T="-bwtypes=Q4_K -bwtall=4"
bw main X=1 $T; bw w8s "$W8" $T; bw w4s "$W4" $T; bw main2 X=1 $T; snap
if awk "BEGIN{exit !($(gluus w8s) <= $(gluus w4s))}"; then N=w8s; W="$W8"; else N=w4s; W="$W4"; fi; echo "faster: $N"
if awk "BEGIN{exit !($(gluus $N) < $(gluus main) && $(gluus $N) < $(gluus main2))}"; then
  q4km_start $B
  el "checks $N"; timeout 150 env $W $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts kernels > $O/x/chk-$N.txt 2>&1; echo "rc $?"
  grep -E "FAIL|rror" $O/x/chk-$N.txt | head -10; grep -A20 "^fused output" $O/x/chk-$N.txt | grep -E "glu|FAIL"; snap
  q4km_wait; el generate; gen main X=1; gen $N "$W"; snap
  CB_KINDS="gate_up"
  for r in 1 2; do el "bench round $r"; cb main X=1 "--model $F" $r; cb $N "$W" "--model $F" $r; snap; done
fi
el done; snap
