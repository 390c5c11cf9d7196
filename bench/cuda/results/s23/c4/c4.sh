#!/bin/bash
# Session 23, call C4: the fp16 tensor-core products (quant_mh.cu mh_x, mh_xn, mhq_*, mhg_*) on a
# GPU for the first time, and on the product path (RIGSCOPE_CUDA_MH=8|16, quant_mh.go).
#  1. -checks quant -parts mh (Q4_K, Q6_K, Q8_0, Q4_0): each mhq_* variant against float64 (T=1..8, T=k bitwise T=1); the
#     product path (store, add, GLU SiLU/GELU, norm; T=1..16) for MH=8 and 16; times beside dp4a.
#  2. -checks quant -parts models with MH=16, then 8: the gocoder Q8_0, Q4_0, Q4_K_M files greedy
#     = reference, = CPU, and verify = decode.
#  3. llama-8b Q4_K_M (then Q8_0): cuda-bench --model (decode tok/s, verify of 5 / decode, time per
#     kernel kind) and generate, default against MH=16 and MH=8, alternating.
# Build here (see bench/cuda/results/s23/README.md):
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/c4/cc.test ./gpu/cuda && xz -T2 -6 -f carry/c4/cc.test
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/c4/rigscope-cuda . && xz -T2 -6 -f carry/c4/rigscope-cuda
#   (cd ../shared/models && tar cf - reference-public.json) | xz > carry/c4/m.tar.xz; xz -T2 -9 -c ../shared/models/gocoder-14m.Q8_0.gguf > carry/c4/q8.gguf.xz
# Run there: bash carry/c4/c4.sh   (carry ["carry/c4"])
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c4.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; } # true while fewer than $1 s have passed
xz -dc carry/c4/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc carry/c4/rigscope-cuda.xz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
(cd /tmp && xz -dc "$OLDPWD/carry/c4/m.tar.xz" | tar xf -); M=/tmp; xz -dc carry/c4/q8.gguf.xz > /tmp/gocoder-14m.Q8_0.gguf
cc() { timeout ${TO:-200} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }

el "quant mh"; TO=170 cc -checks quant -parts mh > $O/mh.txt 2>&1; echo "exit $?"
grep -E "FAIL|panic|error" $O/mh.txt | head -20
grep -E "^q(4k|6k|80|40)_w|^Q(4_K|6_K|8_0|4_0) |^(qkv|wo|gate|down|out)|matrix|fp16 tensor cores" $O/mh.txt | head -120

for mh in 16 8; do
  left 330 || break
  el "quant models MH=$mh"; RIGSCOPE_CUDA_MH=$mh TO=90 cc -checks quant -parts models -models $M > $O/models-mh$mh.txt 2>&1; echo "exit $?"
  grep -E "FAIL|panic|gocoder|verify" $O/models-mh$mh.txt | head -16
done

mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el "write q4_k_m"; [ -f $F ] || $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F
cb() { timeout 100 env "$@" $B cuda-bench --model $F --steps 50; }
for mh in 0 16 8; do
  left 470 || break
  el "cuda-bench q4_k_m MH=$mh"; cb RIGSCOPE_CUDA_MH=$mh > $O/cb-q4km-mh$mh.txt 2>&1; echo "exit $?"
  grep -A3 "^shape" $O/cb-q4km-mh$mh.txt; grep -E "^## .*ungraphed|^(qkv|wo|gate_up|down|quantx|attention|output|logits|argmax) " $O/cb-q4km-mh$mh.txt
done
g() { timeout 60 env "$@" $B generate --device cuda --model $F --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > /tmp/g.json 2>/tmp/g.err
  python3 -c 'import json; print(round(json.load(open("/tmp/g.json"))["stats"]["decode_tokens_per_s"],1))' 2>&1 | tail -1; }
for r in 1 2; do
  left 540 || break
  el "generate q4_k_m round $r"; echo "default $(g RIGSCOPE_CUDA_MH=0)  MH=16 $(g RIGSCOPE_CUDA_MH=16)  MH=8 $(g RIGSCOPE_CUDA_MH=8)"
done
F=/tmp/q/llama-8b.q8_0.gguf
if left 480; then
  el "write q8_0"; $B write-gguf --model synthetic:llama-8b --type q8_0 --out $F > /dev/null
  for mh in 0 16; do
    left 560 || break
    el "cuda-bench q8_0 MH=$mh"; cb RIGSCOPE_CUDA_MH=$mh > $O/cb-q80-mh$mh.txt 2>&1; echo "exit $?"; grep -A3 "^shape" $O/cb-q80-mh$mh.txt
  done
fi
el done
