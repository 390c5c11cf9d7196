#!/bin/bash
# The kernels and knobs it measures are not in main: results/s39/seq.patch holds them (apply it
# to rebuild the images and binaries). cc.test also needs -bwtall (in main since this session).
# Session 39, call n6: n5's w8s streamed faster per byte than main's GLU (x4 rows: 2764 against
# 2531 GB/s) but lost at the real shape (34.8 against 27.8 us): at 80 registers 3 blocks an SM
# hold 396 of its 448 blocks, so 52 blocks ran in a second wave. Here w8s is built for 4 blocks
# an SM (64 registers; ptxas spills 56 bytes, its running sums, to local memory) and each pass's
# sums are xor-reduced when the pass ends and parked in shared memory (w4s too). (a) the bandwidth
# table with -bwtall=4, main's embedded image against seq.cubin under q4glu8s and q4glu4s; then,
# only if w8s beats main at gate_up T=1 (pdl): (b) `generate` md5 main and w8s (must be equal),
# (c) cuda-bench Q4_K_M, alternating, two rounds.
# carry/n6: cc.test.xz and rigscope-cuda.xz (as n5's), seq.cubin.xz (this image). Carry
# ["carry/n6"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n6; unpack carry/n6 cc.test rigscope-cuda seq.cubin; chmod -x /tmp/seq.cubin
C=/tmp/cc.test; B=/tmp/rigscope-cuda
P=RIGSCOPE_CUDA_PTX=/tmp/seq.cubin; REST=q4add32,q80add32,q40glu8,q40add16
W8="$P RIGSCOPE_CUDA_MQW=q4glu8s,$REST"; W4="$P RIGSCOPE_CUDA_MQW=q4glu4s,$REST"
bw() { el "bandwidth $1"; timeout 100 env $2 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -bwtypes=Q4_K -bwsweep=false -bwmma=false -bwtall=4 > $O/x/bw-$1.txt 2>&1; echo "rc $?"
  grep -E "gate_up.*pdl \(" $O/x/bw-$1.txt; }
us() { grep -E "^Q4_K +gate_up 2x14336x4096 +T=1 .*pdl" $O/x/bw-$1.txt | head -1 | sed -E 's/.* ([0-9.]+) us pdl.*/\1/'; }
bw main X=1; bw w8s "$W8"; bw w4s "$W4"; bw main2 X=1; snap
if awk "BEGIN{exit !($(us w8s) < $(us main) && $(us w8s) < $(us main2))}"; then
  q4km_start $B; q4km_wait; el generate; gen main X=1; gen w8s "$W8"; snap
  CB_KINDS="gate_up"
  for r in 1 2; do el "bench round $r"; cb main X=1 "--model $F" $r; cb w8s "$W8" "--model $F" $r; snap; done
fi
el done; snap
