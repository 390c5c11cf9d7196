#!/bin/bash
# Session 30, call p7: the batch-invariant attention's one-token twin (kernels/attn_fixed.cu ONE, the
# _t1 kernels; RIGSCOPE_CUDA_ATTONE=0 turns it off). (a) `-checks kernels,kv`: the attention against
# its reference at every T, and verify rows against decode rows on the _t1 kernels and on the
# general one (plans 32/g4 and 32/g4/gen), bitwise; the kv part's timing table. (b) cuda-bench on the synthetic llama-8b as Q4_K_M and in bf16, twin on and off, alternating, two
# rounds. Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p7/cc.test ./gpu/cuda,
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p7/rigscope-cuda . (both xz).
# Carry ["carry/p7"]. The eagle check is p8 (the models and both binaries pass the carry limit).
. bench/cuda/call.sh; call_init p7; unpack carry/p7 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
el "checks kernels,kv"
timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels,kv -models /nonexistent > $O/x/checks.txt 2>&1; echo "exit $?"
echo "ok lines $(grep -c ' ok' $O/x/checks.txt)"; grep -E -i "fail|panic|mismatch" $O/x/checks.txt | head -20
grep -E "^(f32|bf16) |^[0-9]+ +(f32|bf16)|attention kernels of a step|bitwise" $O/x/checks.txt | head -40
snap; q4km_start $B; q4km_wait
cb() { timeout 60 env RIGSCOPE_CUDA_ATTONE=$2 $B cuda-bench $3 --steps 50 > $O/x/cb-$1-$2-$4.txt 2>&1; echo "$1 ATTONE=$2 round $4: $(row $O/x/cb-$1-$2-$4.txt)"; grep -E "^attention " $O/x/cb-$1-$2-$4.txt; }
for r in 1 2; do el "round $r"
  for a in 1 0; do cb q4 $a "--model $F" $r; done
  for a in 1 0; do cb bf16 $a "--shapes llama-8b" $r; done
done
el done; snap
