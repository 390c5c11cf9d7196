#!/bin/bash
# Session 40 (run in session 41), call v4: XPRE for Q4_0 and Q5_K (x45.cubin: the landed tree, 6171e71, with their
# XPRE set to 1 in kernels/quant.cu), against main's image: the bandwidth table for Q4_0 and Q5_K,
# alternating, twice each; then -checks quant -parts kernels with x45 (bits across T).
# carry/v4: cc.test.xz (v1's) and x45.cubin.xz. Carry ["carry/v4"] after
# `KEEP=s40 sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init v4
unpack carry/v4 cc.test x45.cubin; chmod -x /tmp/x45.cubin; C=/tmp/cc.test; E=RIGSCOPE_CUDA_PTX=/tmp/x45.cubin
TT="-bwtypes=Q4_0,Q5_K"
bw main X=1 $TT; bw x45 "$E" $TT; bw main2 X=1 $TT; bw x452 "$E" $TT; snap
el "checks x45"; timeout 120 env $E $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts kernels > $O/x/chk-x45.txt 2>&1; echo "rc $?"
grep -cE " ok" $O/x/chk-x45.txt; grep -E "FAIL|rror" $O/x/chk-x45.txt | head -10
el end; snap
