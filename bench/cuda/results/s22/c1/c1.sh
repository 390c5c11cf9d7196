#!/bin/bash
# Session 22, call C1: the int8 tensor-core Q4_K products (mqm*, quant_mma.cu) in blocks of
# 4, 8 and 16 warps, loads of 2 super-blocks ahead (U) for the plain ones: -checks quant
# -parts mma (each against float64, T=k rows bitwise T=1) and their times beside dp4a;
# the bandwidth table's Q4_K_M step on them; then Q4_K_M end to end: default, with
# q6add16 (MQW), with MQM=16 and 8, alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c1/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
gunzip -c carry/c1/k90.cubin.gz > /tmp/k90.cubin; export RIGSCOPE_CUDA_PTX=/tmp/k90.cubin
cc() { timeout ${TO:-200} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "quant mma"; cc -checks quant -parts mma > $O/mma.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|^[0-9]+ +(mv|glu|gegl)|^(qkv|wo|gate|down)|matrix" $O/mma.txt | head -40
el "bandwidth Q4_K,Q6_K with mma w16"; TO=200 cc -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K -bwsweep=false -bwmmawarps=16 > $O/bw.txt 2>&1; echo "exit $?"
grep -E "^Q4_K_M|^Q6_K |^Q4_K |T=1 .*pdl" $O/bw.txt | head -30
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; mkdir -p /tmp/q
el "write"; /tmp/rigscope-cuda write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4_k_m.gguf
g() { timeout 100 env $2 /tmp/rigscope-cuda generate --device cuda --model /tmp/q/$1.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > /tmp/g.json 2>/tmp/g.err
  python3 -c 'import json; print(round(json.load(open("/tmp/g.json"))["stats"]["decode_tokens_per_s"],1))' 2>&1 || tail -3 /tmp/g.err; }
el generate
for r in 1 2; do
  echo "round $r: default $(g q4_k_m X=1)  q6add16 $(g q4_k_m RIGSCOPE_CUDA_MQW=q4glu8,q4add32,q80add32,q40glu8,q40add16,q6add16)  mqm16 $(g q4_k_m RIGSCOPE_CUDA_MQM=16)  mqm8 $(g q4_k_m RIGSCOPE_CUDA_MQM=8)"
done
el done
