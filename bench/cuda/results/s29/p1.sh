#!/bin/bash
# Session 29, call p1: (1) the attention kernels with the wo prefetch argument (-checks kernels: every
# variant run twice, the second launch prefetching a buffer, results against float64); (2) issue 23's
# numerics target on the GPU: teacher-forced device argmax against llama.cpp's greedy tokens on the
# gocoder Q4_K_M and Q6_K files (bench/peer-kquants.sh's outputs, made here: carry/p1/peer.tar.xz),
# default and RIGSCOPE_CUDA_MQK=8; (3) RIGSCOPE_CUDA_WOPF=32 (the attention prefetches wo's weights
# into L2) against off: `generate --device cuda` on the synthetic llama-8b as Q4_K_M and Q8_0,
# alternating, two rounds; cuda-bench on Q4_K_M and on the bf16 shape, off then on.
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p1/cc.test ./gpu/cuda;
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p1/rigscope-cuda .; both xz.
. bench/cuda/call.sh; call_init p1; unpack carry/p1 rigscope-cuda cc.test; B=/tmp/rigscope-cuda; C=/tmp/cc.test
mkdir -p /tmp/peer /tmp/m /tmp/q && tar xJf carry/p1/peer.tar.xz -C /tmp/peer && tar xJf carry/p1/m.tar.xz -C /tmp/m
( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4.gguf > /dev/null 2>&1 ) & p1=$!
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out /tmp/q/q8.gguf > /dev/null 2>&1 ) & p2=$!
el kernels
timeout 240 $C -test.run TestCUDACheck -checks kernels -models /tmp/m > $O/x/kernels.txt 2>&1; echo "kernels rc $? ($(grep -c ' ok' $O/x/kernels.txt) ok lines)"; grep -E "FAIL|fail" $O/x/kernels.txt | head -5; tail -2 $O/x/kernels.txt
el peer
for k in 0 8; do
  RIGSCOPE_CUDA_MQK=$k timeout 120 $C -test.run TestCUDACheck -checks quant -parts peer -peer /tmp/peer -models /tmp/m > $O/x/peer-mqk$k.txt 2>&1
  echo "MQK=$k rc $?"; grep -E "agreement|FAIL" $O/x/peer-mqk$k.txt
done
wait $p1 $p2; el generate
for r in 1 2; do for f in q4 q8; do for pf in 0 32; do
  RIGSCOPE_CUDA_WOPF=$pf timeout 60 $B generate --device cuda --model /tmp/q/$f.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > $O/x/g-$f-$pf-$r.json 2> $O/x/g-$f-$pf-$r.err
  echo "$f WOPF=$pf round $r: $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["stats"]["decode_tokens_per_s"],1))' $O/x/g-$f-$pf-$r.json)"
done; done; done
el bench
for pf in 0 32; do
  RIGSCOPE_CUDA_WOPF=$pf timeout 60 $B cuda-bench --model /tmp/q/q4.gguf --steps 50 > $O/x/cb-q4-$pf.txt 2>&1; echo "q4 WOPF=$pf: $(row $O/x/cb-q4-$pf.txt)"; grep -E "^(qkv|wo|attention) " $O/x/cb-q4-$pf.txt
  RIGSCOPE_CUDA_WOPF=$pf timeout 90 $B cuda-bench --shapes llama-8b --steps 50 > $O/x/cb-bf16-$pf.txt 2>&1; echo "bf16 WOPF=$pf: $(row $O/x/cb-bf16-$pf.txt)"; grep -E "^(qkv|wo|attention) " $O/x/cb-bf16-$pf.txt
done
el done; snap; rm -rf $O/x
