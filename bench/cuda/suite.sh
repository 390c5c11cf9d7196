#!/bin/sh
# The device suite in one call (about 8 minutes on a cold H200): the
# product path against the measured path (bench/cuda/product.sh, SPEC=0:
# `generate --device cuda` beside `cuda-bench` on the llama-8b shape, two
# rounds) while llama.cpp CUDA builds in the background, then rigscope
# against llama.cpp CUDA on the same GGUF files (bench/cuda/quant.sh,
# TYPES, default bf16). A second call on the still-warm machine can run
# quant.sh with more TYPES and bench/cuda/prefill.sh without rebuilding.
# Build here:
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
#   mkdir -p carry && cp -r ../shared/peers/llamacpp-cuda carry/
# Run there:   sh bench/cuda/suite.sh   (carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"])
# Every output but summary.txt goes to $OUT/x and comes back as $OUT/x.tgz
# (a device call returns at most 8 files; product.sh and quant.sh write
# about 30).
set -u
OUT=${OUT:-/tmp/out}; O=$OUT/x; mkdir -p "$O"
t0=$(date +%s)
if [ ! -x /tmp/llamacpp-cuda/llama-bench ]; then
	(bash carry/llamacpp-cuda/build.sh > "$O/llama-build.txt" 2>&1; echo "build exit $? after $(( $(date +%s) - t0 )) s" >> "$O/llama-build.txt") &
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$O/gpu.txt" 2>&1
OUT=$O SPEC=0 ROUNDS=${ROUNDS:-2} sh bench/cuda/product.sh > "$O/product.txt" 2>&1
echo "product.sh done after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
wait
tail -1 "$O/llama-build.txt" 2>/dev/null | tee -a "$OUT/summary.txt"
OUT=$O TYPES=${TYPES:-bf16} sh bench/cuda/quant.sh > "$O/quant.txt" 2>&1
echo "quant.sh done after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
cat "$O/gpu.txt" "$O/product.txt" "$O/quant.txt" | tee -a "$OUT/summary.txt"
(cd "$OUT" && tar czf x.tgz x && rm -rf x)
