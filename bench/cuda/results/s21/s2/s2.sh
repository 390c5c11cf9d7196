#!/bin/bash
# Session 21, call S2: a Q4_K_M / Q5_K_M layer's mixed qkv stack (Q4_K or Q5_K q, k with a Q6_K v)
# in one mqn2_* launch. Correctness (-checks quant kernels,models: the stacks at T=1 and 5
# against float64 and bitwise against a launch a part), the qkv product's time with
# RIGSCOPE_CUDA_MQN2=0 against the default (bandwidth part), then the Q4_K_M file end to end
# (quant.sh, rigscope only), alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/s2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/s2/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/s1/m.tar.xz" | tar xf -); M=/tmp
cc() { timeout ${TO:-200} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "quant kernels,models"; cc -checks quant -parts kernels,models -models $M > /tmp/qk.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|Q4_K\+|Q5_K\+|differ" /tmp/qk.txt | head -20; grep -cE " ok " /tmp/qk.txt; grep -iE "gocoder|agree|12/12" /tmp/qk.txt | head -12
for r in 1; do for v in 0 1; do
  el "bandwidth MQN2=$v round $r"; RIGSCOPE_CUDA_MQN2=$v TO=150 cc -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K -bwsweep=false -bwmma=false > /tmp/bw$v$r.txt 2>&1; echo "exit $?"
  grep -E "Q4_K\+6|^Q4_K_M" /tmp/bw$v$r.txt
done; done
cp /tmp/bw11.txt $O/bw-mqn2.txt; cp /tmp/bw01.txt $O/bw-parts.txt; cp /tmp/qk.txt $O/quant-kernels.txt
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
mkdir -p /tmp/q; el "write"; /tmp/rigscope-cuda write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/llama-8b.q4_k_m.gguf
for r in 1 2; do for v in 0 1; do
  RIGSCOPE_CUDA_MQN2=$v timeout 200 /tmp/rigscope-cuda generate --device cuda --model /tmp/q/llama-8b.q4_k_m.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > /tmp/g.json 2>/tmp/g.err
  echo "round $r MQN2=$v: $(python3 -c 'import json; print(round(json.load(open("/tmp/g.json"))["stats"]["decode_tokens_per_s"],1))' 2>&1)"
done; done
el done
