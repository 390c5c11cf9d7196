#!/bin/bash
# Session 30, call p6 (written in session 29): the Q8_K products' one-token dp4a twins (kernels/quant_mqk.cu mqk1_q4k_wW, mqk1_q6k_wW,
# mqkg1_q4k_wW; under RIGSCOPE_CUDA_MQK, RIGSCOPE_CUDA_MQK1=0 turns them off). (a) `-checks quant
# -parts mqk`: every variant, now with u0 (T=1 rows from the twin, T>1 from the tensor-core kernel),
# and the product path as path1: rows bitwise across T, against float64; then the timing table.
# (b) `generate` greedy tokens with MQK=8, twins on and off: the same; (c) cuda-bench on the
# synthetic llama-8b as Q4_K_M: MQK=8, MQK=8 MQK1=0 and the default, alternating, two rounds.
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p6/cc.test ./gpu/cuda,
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p6/rigscope-cuda . (both xz).
. bench/cuda/call.sh; call_init p6; unpack carry/p6 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda; mkdir -p /tmp/q
( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4.gguf > /dev/null 2>&1 ) & pw=$!
el mqk
timeout 240 $C -test.run TestCUDACheck -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|,0 |path1" $O/x/mqk.txt | head -40; grep -E "^Q4_K .* 1 " $O/x/mqk.txt | head -8
wait $pw; el generate
for k in 1 0; do RIGSCOPE_CUDA_MQK=8 RIGSCOPE_CUDA_MQK1=$k timeout 60 $B generate --device cuda --model /tmp/q/q4.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > $O/x/g-$k.json 2> /dev/null; done
python3 -c 'import json,sys; t=[json.load(open(f)) for f in sys.argv[1:]]; print("greedy tokens twins on = off:", t[0]["tokens"] == t[1]["tokens"], len(t[0]["tokens"]), [round(x["stats"]["decode_tokens_per_s"],1) for x in t])' $O/x/g-1.json $O/x/g-0.json
el bench
for s in "8 1" "8 0" "0 1" "8 1" "8 0" "0 1"; do set -- $s
  RIGSCOPE_CUDA_MQK=$1 RIGSCOPE_CUDA_MQK1=$2 timeout 60 $B cuda-bench --model /tmp/q/q4.gguf --steps 50 > $O/x/cb-$1-$2.txt 2>&1
  echo "MQK=$1 MQK1=$2: $(row $O/x/cb-$1-$2.txt)"; grep -E "^(gate_up|down|wo|qkv) " $O/x/cb-$1-$2.txt
done
el done; snap; rm -rf $O/x
