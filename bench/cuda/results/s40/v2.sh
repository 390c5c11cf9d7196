#!/bin/bash
# Session 40, call v2: the landing candidate of v1's txg, per type (kernels/quant.cu XPRE: Q8_0
# and Q6_K load every token's activation before the arithmetic at T > 1; Q4_K, Q5_K, Q4_0 as
# before). new.cubin is the regenerated sm_90 image of the tree to land; main's is the one
# embedded in the binaries. (a) -checks quant -parts kernels with new (bits: every T bitwise its
# T=1 run, and float64 bounds); (b) the bandwidth table, main and new; (c) cuda-bench on Q8_0 and
# Q4_K_M (verify k=4 / decode), main and new alternating, two rounds.
# carry/v2: cc.test.xz (v1's) and new.cubin.xz; carry/rigscope-cuda.gz (main's default binary).
# Carry ["carry/v2", "carry/rigscope-cuda.gz"] after `KEEP=s40 sh bench/cuda/aside.sh out`.
# CALL (default v2) names the call, its output and its carry folder (v3.sh runs this as v3).
CALL=${CALL:-v2}
. bench/cuda/call.sh; call_init $CALL
unpack carry/$CALL cc.test new.cubin; chmod -x /tmp/new.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda; E=RIGSCOPE_CUDA_PTX=/tmp/new.cubin
mkdir -p /tmp/q; Q8=/tmp/q/llama-8b.q8_0.gguf
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out $Q8 > /dev/null 2>&1; touch /tmp/q/done8 ) &
el "checks new"; timeout 170 env $E $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts kernels > $O/x/chk-new.txt 2>&1; echo "rc $?"
grep -cE " ok" $O/x/chk-new.txt; grep -E "FAIL|rror" $O/x/chk-new.txt | head -10; snap
TT="-bwtypes=Q4_K,Q6_K,Q8_0"; bw main X=1 $TT; bw new "$E" $TT; snap
while [ ! -f /tmp/q/done8 ]; do sleep 2; done
q4km_start $B
CB_KINDS="gate_up|down|qkv|wo|output"
for r in 1 2; do left 480 || break; el "q8_0 round $r"; cb q8main X=1 "--model $Q8" $r; cb q8new "$E" "--model $Q8" $r; snap; done
q4km_wait
for r in 1 2; do left 540 || break; el "q4_k_m round $r"; cb q4main X=1 "--model $F" $r; cb q4new "$E" "--model $F" $r; snap; done
el end; snap
