#!/bin/bash
# Session 38, call n4 (written for the next session, not run): the dp4a products trigger their
# dependants right after pdl_wait (early.cubin: main built with -DMQ_EARLY_TRIGGER,
# early-trigger.patch), so that a one-wave product's dependant is scheduled at once and its blocks
# take the SMs the product's short tail leaves idle (the Q4_K GLU: 448 blocks, 52 SMs run a
# fourth), loading their first weights there. (a) -checks quant -parts bandwidth, main and early
# (the PDL rows launch a product after itself); (b) `generate` md5 main and early (must be equal);
# (c) cuda-bench Q4_K_M and Q8_0, main and early, alternating, two rounds. Session 39 added el2:
# early with RIGSCOPE_CUDA_L2PF=1 (main's knob: every product prefetches its weights into L2
# before pdl_wait), so that an early-scheduled dependant streams its weights during the tail; and
# cc.test's -bwtall=4 rows (the layer products with 4x their rows, session 39's check_quant_bw_test.go):
# time = bytes/rate + a launch's fixed cost, so the tall rows part the two.
# Carry ["carry/n4", "carry/rigscope-cuda.gz"]: carry/n4 holds cc.test.xz (`go test -c -tags
# 'cuda cubinonly' -ldflags='-s -w' ./gpu/cuda` of main) and early.cubin.xz (nvcc 11.8
# -DMQ_EARLY_TRIGGER, sm_90 ptx, then ptxas); rigscope-cuda.gz is main's default path.
. bench/cuda/call.sh; call_init n4; unpack carry/n4 cc.test early.cubin; chmod -x /tmp/early.cubin; C=/tmp/cc.test
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
E=RIGSCOPE_CUDA_PTX=/tmp/early.cubin; EL="$E RIGSCOPE_CUDA_L2PF=1"
q4km_start $B; F8=/tmp/q/llama-8b.q8_0.gguf
bw() { el "bandwidth $1"; timeout 100 env $2 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K -bwsweep=false -bwmma=false $3 > $O/x/bw-$1.txt 2>&1; echo "rc $?"
  grep -E "pdl \(" $O/x/bw-$1.txt | head -40; }
bw main X=1 -bwtall=4; bw early "$E" -bwtall=4; bw el2 "$EL"
q4km_wait; ( $B write-gguf --model synthetic:llama-8b --type q8_0 --out $F8 > /dev/null 2>&1; touch /tmp/q/done8 ) &
el generate; gen main X=1; gen early "$E"; gen el2 "$EL"; snap
while [ ! -f /tmp/q/done8 ]; do sleep 2; done
CB_KINDS="gate_up|down|qkv|wo|attention"
for r in 1 2; do el "bench round $r"
  cb main X=1 "--model $F" $r; cb early "$E" "--model $F" $r; cb el2 "$EL" "--model $F" $r
  cb q8-main X=1 "--model $F8" $r; cb q8-early "$E" "--model $F8" $r; snap; done
el done; snap
