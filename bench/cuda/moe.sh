#!/bin/sh
# One device call for issue 22's mixtures of experts and latent attention
# on the GPU (Mixtral, Qwen3-MoE, DeepSeek-V3: kernels/moe.cu, mla.cu,
# gpu/cuda/moe.go, mla.go): the moe check (the MoE kernels alone vs
# float64, softmax and DeepSeek-V3 routing, and each row of a batch vs the
# row alone, bit for bit; the latent attention kernels vs float64 and a
# chain's rows vs decode, bit for bit; the tiny-moe preset in f32, bf16 and
# f16 and tiny-mla in f32 and bf16 vs the CPU engine, verify vs decode, TP 2
# vs TP 1; Q8_0 experts refused by name), the arch check on the four MoE
# fixtures (each at TP 1 and 2: greedy vs reference.json, first-step
# logits vs the reference and the CPU engine, TP 2 vs TP 1, verify of 8
# and a tree of 8 vs decode, decode after KeepPath) and the presets check
# (tiny-mla and deepseek-v3 built on the device, decode and verify steps);
# with the product binary carried too, decode tok/s of the deepseek-v3,
# mixtral-8x7b, qwen3-30b-a3b and qwen3-8b presets against the bound of
# the bytes a token reads (its k experts, shared expert and router, weight
# GB in the table).
# Build here:
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/moe && cp -r ../shared/models/arch/{tiny-mixtral-hf,tiny-mixtral.F16.gguf,tiny-qwen3moe-hf,tiny-deepseekv3-hf} carry/moe/
#   (optional) go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:   sh bench/cuda/moe.sh   (carry ["carry/moe", "carry/cuda-check.test.gz"] plus, when it fits
#              the 64 MiB, "carry/rigscope-cuda.gz")
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
timeout ${T_CHECK:-150} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 \
  -arch ${ARCH:-carry/moe} -checks ${CHECKS:-moe,arch,presets} > "$O/moe-check.txt" 2>&1
echo "cuda-check exit status $?" >> "$O/moe-check.txt"
if [ -f carry/rigscope-cuda.gz ]; then
  gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
  timeout ${T_BENCH:-300} /tmp/rigscope-cuda cuda-bench --steps 50 --shapes ${SHAPES:-deepseek-v3,mixtral-8x7b,qwen3-30b-a3b,qwen3-8b} > "$O/moe-bench.txt" 2>&1
  echo "cuda-bench exit status $?" >> "$O/moe-bench.txt"
fi
grep -v '^prompt [0-9]* (' "$O/moe-check.txt" | tail -120
[ -f "$O/moe-bench.txt" ] && tail -40 "$O/moe-bench.txt"
exit 0
