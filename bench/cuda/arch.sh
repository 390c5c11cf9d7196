#!/bin/sh
# One device call for issue 22's dense architectures on the GPU: the kernel
# check (attention with q/k/v biases, q/k head norms and sliding windows;
# the GELU-tanh GLU) and the arch check (each fixture at TP 1 and 2 vs
# reference.json, the CPU engine and TP 1; verify, tree and KeepPath vs
# decode; MoE and MLA still refused by name); with the product binary
# carried too, decode tok/s of the qwen3-8b and gemma3-12b presets beside
# llama-8b (what the attnx_ kernels cost).
# Build here:
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/arch && cp -r ../shared/models/arch/{tiny-llama31-hf,tiny-llama31.F16.gguf,tiny-qwen2-hf,tiny-qwen2.F16.gguf,tiny-qwen3-hf,tiny-qwen3.F16.gguf,tiny-mistral-hf,tiny-gemma3-hf,tiny-gemma3.F16.gguf} carry/arch/
#   (optional) go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:   sh bench/cuda/arch.sh   (carry ["carry/arch", "carry/cuda-check.test.gz"] plus, when they fit
#              the 64 MiB, "carry/rigscope-cuda.gz"; CHECKS=kernels,arch,models MODELS=carry/m2 adds the gocoder check)
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
timeout ${T_CHECK:-400} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -models ${MODELS:-carry/m2} \
  -arch ${ARCH:-carry/arch} -checks ${CHECKS:-kernels,arch} > "$O/arch-check.txt" 2>&1
echo "cuda-check exit status $?" >> "$O/arch-check.txt"
if [ -f carry/rigscope-cuda.gz ]; then
  gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
  timeout ${T_BENCH:-150} /tmp/rigscope-cuda cuda-bench --shapes ${SHAPES:-llama-8b,qwen3-8b,gemma3-12b} > "$O/arch-bench.txt" 2>&1
fi
grep -v '^prompt [0-9]* (\|^arch tiny' "$O/arch-check.txt" | tail -200
[ -f "$O/arch-bench.txt" ] && tail -60 "$O/arch-bench.txt"
exit 0
