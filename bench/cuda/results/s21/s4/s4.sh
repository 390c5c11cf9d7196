#!/bin/bash
# Session 21, call S4: the wide one-token variants (RIGSCOPE_CUDA_MQW: a block per whole 32-row
# group quantizes its output itself, no fence or atomic). -checks quant -parts kernels (the fused
# check runs them at every K split: output = unfused, scratch = qx, bitwise); the products'
# times with MQW=none against the default (bandwidth part); then Q4_K_M and Q8_0 end to end,
# alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/s4.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/s4/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
cc() { timeout ${TO:-120} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "quant kernels"; cc -checks quant -parts kernels > /tmp/qk.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|fused output|MQW" /tmp/qk.txt | head -12; echo "ok rows: $(grep -cE ' ok' /tmp/qk.txt)"; cp /tmp/qk.txt $O/quant-kernels.txt
for v in none default; do
  el "bandwidth MQW=$v"; if [ $v = none ]; then e="RIGSCOPE_CUDA_MQW=none"; else e="X=1"; fi
  env $e /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K,Q8_0,Q4_0 -bwsweep=false -bwmma=false > $O/bw-$v.txt 2>&1; echo "exit $?"
  grep -E "T=1 .*pdl|^Q4_K_M |^Q8_0 |^Q6_K |^Q4_0 " $O/bw-$v.txt | grep -E "wo|gate_up|down|^Q[0-9]" | head -24
done
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; mkdir -p /tmp/q
for t in q4_k_m q8_0; do el "write $t"; /tmp/rigscope-cuda write-gguf --model synthetic:llama-8b --type $t --out /tmp/q/$t.gguf; done
g() { timeout 100 env $2 /tmp/rigscope-cuda generate --device cuda --model /tmp/q/$1.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > /tmp/g.json 2>/tmp/g.err
  python3 -c 'import json; print(round(json.load(open("/tmp/g.json"))["stats"]["decode_tokens_per_s"],1))' 2>&1; }
el generate
for r in 1 2; do for t in q4_k_m q8_0; do
  echo "round $r $t: none $(g $t RIGSCOPE_CUDA_MQW=none)  default $(g $t X=1)"
done; done
el done
