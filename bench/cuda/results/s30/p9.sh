#!/bin/bash
# Session 30, call p9: rigscope against llama.cpp CUDA on the synthetic llama-8b as Q4_K_M with the
# _t1 images (bench/cuda/quant.sh, two rounds alternating), the llama.cpp build and the file written
# at once. Built here: go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda .
# && gzip -9 carry/rigscope-cuda; cp -r ../shared/peers/llamacpp-cuda carry/.
# Carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"].
. bench/cuda/call.sh; call_init p9
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && BW=4.6e12 || BW=3.04e12
mkdir -p /tmp/q; el "llama.cpp build and write-gguf, at once"
(bash carry/llamacpp-cuda/build.sh > $O/x/llama-build.txt 2>&1; echo "build rc $?") & pb=$!
/tmp/rigscope-cuda write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/llama-8b.q4_k_m.gguf > $O/x/write.txt 2>&1; echo "write rc $?"
wait $pb; el quant
OUT=$O/x BW=$BW TYPES=q4_k_m timeout 300 sh bench/cuda/quant.sh; echo "quant rc $?"
el done; snap
