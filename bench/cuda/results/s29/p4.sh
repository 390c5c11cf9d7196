#!/bin/bash
# Session 29, call p4 (the committed images of 309e452): (a) issue 19's gocoder EAGLE-3 target on this
# H100 (`-checks eagle -eagle8b=false`: plain against k=4 chain on the engine path, acceptance, output
# = greedy); (b) what keeps the Q8_K products (RIGSCOPE_CUDA_MQK=8) slower at a decode: cuda-bench on
# the synthetic llama-8b as Q4_K_M, default and MQK=8, each also with RIGSCOPE_CUDA_SKIP=quantx (the
# activation quantization launches left out: garbage tokens, the step without them), two rounds.
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p4/cc.test ./gpu/cuda,
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p4/rigscope-cuda . (both xz);
# m.tar.xz: gocoder-14m-hf, gocoder-14m-eagle3, reference-public.json.
. bench/cuda/call.sh; call_init p4; unpack carry/p4 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/m /tmp/q && tar xJf carry/p4/m.tar.xz -C /tmp/m
( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4.gguf > /dev/null 2>&1 ) & pw=$!
el eagle
timeout 200 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -models /tmp/m > $O/x/eagle.txt 2>&1; echo "eagle rc $?"
grep -iE "tok/s|accept|greedy|FAIL" $O/x/eagle.txt | head -20
wait $pw; el "MQK and qx launches"
for r in 1 2; do for k in 0 8; do for sk in none quantx; do
  RIGSCOPE_CUDA_MQK=$k RIGSCOPE_CUDA_SKIP=$sk timeout 60 $B cuda-bench --model /tmp/q/q4.gguf --steps 50 > $O/x/cb-mqk$k-$sk-$r.txt 2>&1
  echo "MQK=$k SKIP=$sk round $r: $(row $O/x/cb-mqk$k-$sk-$r.txt)"
done; done; done
grep -E "^(quantx|qkv|wo|gate_up|down|output|attention) " $O/x/cb-mqk8-none-1.txt $O/x/cb-mqk0-none-1.txt
el done; snap; rm -rf $O/x
