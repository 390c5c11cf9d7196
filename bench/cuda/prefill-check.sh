#!/bin/sh
# Issue 19's prefill path in one device call: cuda-check -checks prefill
# (each prefill kernel against float64; gocoder-14m-hf greedy and logits on
# the prefill path against the 16-token path and the reference; llama-8b
# shape tok/s at 128/512/2048 tokens and per-kernel time) and eagle (its
# prompts now prefill with EAGLE-3 capture on the prefill path).
# Build here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#             (carry/m2 as bench/cuda/README.md makes it)
# Run there:  sh bench/cuda/prefill-check.sh   (carry ["carry/m2", "carry/cuda-check.test.gz"])
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/smi.txt" 2>&1
timeout ${T_CHECK:-300} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -test.v \
	-models ${MODELS:-carry/m2} -checks ${CHECKS:-prefill,eagle} > "$O/prefill-check.txt" 2>&1
echo "exit status $?" >> "$O/prefill-check.txt"
cat "$O/smi.txt" "$O/prefill-check.txt"
