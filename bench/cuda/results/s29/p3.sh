#!/bin/bash
# Session 29, call p3: the batch-invariant attention's merge with the next group's partials loaded
# before the current group is combined (kernels/attn_partials.cu att_group_load / att_group_comb,
# attn_fixed.cu; the same arithmetic). Checks: -checks kernels,kv (the attention against float64;
# decode rows = verify, tree and keep rows bitwise, both caches; gocoder-14m-hf 12/12). Then old
# (the images before it, RIGSCOPE_CUDA_PTX=old.cubin) against new (embedded), alternating, two
# rounds: cuda-bench on the synthetic llama-8b as Q4_K_M and on the bf16 shape, and `generate
# --device cuda` on Q4_K_M, whose 129 greedy tokens must be the same for both.
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p3/cc.test ./gpu/cuda,
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p3/rigscope-cuda . (both xz);
# old.cubin.gz is kernels/kernels_sm90.cubin.gz of 309e452; mhf.tar.xz is gocoder-14m-hf and
# reference-public.json.
. bench/cuda/call.sh; call_init p3; unpack carry/p3 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
gunzip -c carry/p3/old.cubin.gz > /tmp/old.cubin; mkdir -p /tmp/m /tmp/q && tar xJf carry/p3/mhf.tar.xz -C /tmp/m
( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4.gguf > /dev/null 2>&1 ) & pw=$!
el checks
timeout 240 $C -test.run TestCUDACheck -checks kernels,kv -models /tmp/m > $O/x/checks.txt 2>&1; echo "kernels,kv rc $?"
grep -E "FAIL|differ|12/12|greedy" $O/x/checks.txt | head -20; tail -2 $O/x/checks.txt
wait $pw; el "old against new"
for r in 1 2; do for v in old new; do
  P=; [ $v = old ] && P=/tmp/old.cubin
  RIGSCOPE_CUDA_PTX=$P timeout 60 $B cuda-bench --model /tmp/q/q4.gguf --steps 50 > $O/x/cb-q4-$v-$r.txt 2>&1
  echo "q4 $v $r: $(row $O/x/cb-q4-$v-$r.txt)"; grep -E "^attention " $O/x/cb-q4-$v-$r.txt
  RIGSCOPE_CUDA_PTX=$P timeout 90 $B cuda-bench --shapes llama-8b --steps 50 > $O/x/cb-bf16-$v-$r.txt 2>&1
  echo "bf16 $v $r: $(row $O/x/cb-bf16-$v-$r.txt)"; grep -E "^attention " $O/x/cb-bf16-$v-$r.txt
  RIGSCOPE_CUDA_PTX=$P timeout 60 $B generate --device cuda --model /tmp/q/q4.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > $O/x/g-$v-$r.json 2> $O/x/g-$v-$r.err
  echo "generate q4 $v $r: $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["stats"]["decode_tokens_per_s"],1))' $O/x/g-$v-$r.json)"
done; done
python3 -c 'import json,sys; t=[json.load(open(f))["tokens"] for f in sys.argv[1:]]; print("greedy tokens old = new:", all(x == t[0] for x in t), len(t[0]))' $O/x/g-*.json
el done; snap; rm -rf $O/x
