#!/bin/bash
# Session 31, call p1: the device suite (bench/cuda/suite.sh) with the current images: the product
# path against cuda-bench (bf16 llama-8b, two rounds), then rigscope against llama.cpp CUDA on the
# synthetic llama-8b as Q4_K_M and Q8_0 (two rounds alternating), llama.cpp built in the call.
# Built here: go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda . &&
# gzip -9 -c /tmp/rigscope-cuda > carry/rigscope-cuda.gz; cp -r ../shared/peers/llamacpp-cuda carry/.
# Carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"].
set -u
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 && export BW=4.6e12 || export BW=3.04e12
TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
