#!/bin/bash
# Session 21, call S3: -checks quant kernels,models with the mixed-stack check fixed (the check's
# target had the one-launch knob off) and the quantized gocoder files (written from
# gocoder-14m.Q8_0.gguf: Q4_K_M's layers 2 and 3 have a Q6_K attn_v, so a mixed qkv stack); then
# the Q4_K_M llama-8b file end to end: a launch a part (MQN2=0), mqn2 as landed, and mqn2 held
# to 6 blocks an SM at one token (RIGSCOPE_CUDA_PTX=carry/s3/lb6.cubin), alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/s3.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/s3/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/s3/m.tar.xz" | tar xf -); M=/tmp; xz -dc carry/s3/q8.gguf.xz > /tmp/gocoder-14m.Q8_0.gguf
xz -dc carry/s3/lb6.cubin.xz > /tmp/lb6.cubin
cc() { timeout ${TO:-200} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "quant kernels,models"; cc -checks quant -parts kernels,models -models $M > /tmp/qk.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|Q4_K\+|Q5_K\+" /tmp/qk.txt | head -20; echo "ok rows: $(grep -cE ' ok ' /tmp/qk.txt)"; grep -iE "gocoder|agree|12/12|wrote" /tmp/qk.txt | head -16
cp /tmp/qk.txt $O/quant-kernels.txt
el "lb6 kernels"; RIGSCOPE_CUDA_PTX=/tmp/lb6.cubin cc -checks quant -parts kernels > /tmp/qk6.txt 2>&1; echo "exit $?"; grep -E "FAIL|Q4_K\+|Q5_K\+" /tmp/qk6.txt | head
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
F=/tmp/q/llama-8b.q4_k_m.gguf; mkdir -p /tmp/q; [ -f $F ] || /tmp/rigscope-cuda write-gguf --model synthetic:llama-8b --type q4_k_m --out $F
g() { timeout 200 env "$@" /tmp/rigscope-cuda generate --device cuda --model $F --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > /tmp/g.json 2>/tmp/g.err
  python3 -c 'import json; print(round(json.load(open("/tmp/g.json"))["stats"]["decode_tokens_per_s"],1))' 2>&1; }
el generate
for r in 1 2; do
  echo "round $r: parts $(g RIGSCOPE_CUDA_MQN2=0)  mqn2 $(g RIGSCOPE_CUDA_MQN2=1)  mqn2-lb6 $(g RIGSCOPE_CUDA_PTX=/tmp/lb6.cubin)"
done
el done
