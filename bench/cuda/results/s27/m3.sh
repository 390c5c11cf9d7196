#!/bin/bash
# Session 27, call m3 (about 3 device minutes past the start): the regenerated images (bucket 5 and
# 2 rows a group at 5 and 8 tokens for every dp4a product, kernels/quant_mv.cu MQ_ROWS) as the
# product ships them, no RIGSCOPE_CUDA_PTX. 1. -checks kernels,quant -parts kernels,models: every
# kernel against float64, T=k rows bitwise T=1, the gocoder files (Q8_0 and the Q4_K_M, Q4_0, BF16
# written from it) greedy = reference = CPU, verify(15) rows bitwise decode's; 2. cuda-bench on the
# synthetic llama-8b as Q4_K_M and as Q8_0 (verify k=4 / decode).
# carry/m3: rigscope-cuda.xz, cc.test.xz (main's builds, cubinonly), q8.gguf.xz
# (gocoder-14m.Q8_0.gguf), m.tar.xz (reference-public.json).
. bench/cuda/call.sh; call_init m3
C=carry/m3
unpack $C rigscope-cuda cc.test q8.gguf
mkdir -p /tmp/models && mv /tmp/q8.gguf /tmp/models/gocoder-14m.Q8_0.gguf && xz -dc $C/m.tar.xz | tar xf - -C /tmp/models
B=/tmp/rigscope-cuda
q4km_start $B
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out /tmp/q/llama-8b.q8_0.gguf > /dev/null 2>&1; touch /tmp/q/done8 ) &
el "checks kernels,quant (kernels, models)"
timeout 240 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels,quant -parts kernels,models -models /tmp/models > $O/x/checks.txt 2>&1; echo "exit $?"
grep -cE " ok" $O/x/checks.txt; grep -E "FAIL|panic|rror" $O/x/checks.txt | head -8
grep -A8 "^model " $O/x/checks.txt; grep -A8 "^verify(15)" $O/x/checks.txt
snap; q4km_wait
cb() { local f=$1 tag=$2; timeout 40 $B cuda-bench --model $f --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^(gate_up|qkv|down|wo) " $O/x/cb-$tag.txt; }
el "cuda-bench"
cb $F q4km
while [ ! -f /tmp/q/done8 ]; do sleep 2; done
cb /tmp/q/llama-8b.q8_0.gguf q80
el done
snap; rm -rf $O/x
