#!/bin/sh
# Issue 19's seam in one device call: the GPU's decode and verify steps now
# run engine/model's Step over the Target's operations (gpu/cuda/step_ops.go)
# instead of a hand-sequenced enqueue. The checks that run whole steps:
#   models  gocoder-14m.Q8_0.gguf greedy and logits vs the reference and the
#           CPU engine, verify = decode (the quantized products' fused
#           activation quantization, which looks ahead to the next product)
#   quant   the same for Q4_0, Q4_K_M (mixed-type stacks) and BF16 (tensor
#           cores, SplitX) written from the Q8_0 file
#   arch    Llama 3.1, Qwen2 (biases), Qwen3 (head norms), Mistral (window),
#           Gemma 3 (embedding scale, post-norms, GELU; GGUF with layer
#           types) at TP 1 and TP 2 (joinRanks, post-norm of the sum): vs
#           reference.json, the CPU engine, TP 1, verify, tree, KeepPath
# Build here (in the checkout; ../shared/models beside it):
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/seam/m carry/seam/arch
#   cp -al ../shared/models/gocoder-14m.Q8_0.gguf ../shared/models/reference-public.json carry/seam/m/
#   cp -al ../shared/models/arch/tiny-llama31-hf ../shared/models/arch/tiny-qwen2-hf ../shared/models/arch/tiny-qwen3-hf \
#          ../shared/models/arch/tiny-mistral-hf ../shared/models/arch/tiny-gemma3-hf ../shared/models/arch/tiny-gemma3.F16.gguf carry/seam/arch/
#   (30 MB + 11 MB + the tree's 12 MB)
# Run there:  sh bench/cuda/seam.sh   (carry ["carry/seam", "carry/cuda-check.test.gz"]; about 2 minutes)
# The EAGLE-3 head's layer (gpu/cuda/head_ops.go: model.Layers over the
# head's operations) is checked by the eagle check, which needs other
# fixtures (the 64 MiB do not hold both sets): with carry/m2 as
# bench/cuda/README.md makes it (gocoder-14m-hf, draft F16,
# gocoder-14m-eagle3, reference),
#   CHECKS=eagle MODELS=carry/m2 sh bench/cuda/seam.sh   (carry ["carry/m2", "carry/cuda-check.test.gz"])
# success: the eagle table's CUDA rows equal to the CPU's (=greedy 12/12,
# mean acceptance length as the reference, 3.2576) and PASS.
# Success: "--- PASS: TestCUDACheck" and "exit status 0"; the tables as
# session 10/11 had them (arch rows 12/12 =ref, =cpu, =tp1; verify 96/96,
# tree 60/60; quant greedy=cpu as bench/cuda/results/s11).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
timeout ${T_CHECK:-300} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -test.v \
	-models ${MODELS:-carry/seam/m} -arch ${ARCH:-carry/seam/arch} -checks ${CHECKS:-models,quant,arch} > "$O/seam-check.txt" 2>&1
echo "exit status $?" >> "$O/seam-check.txt"
grep -v '^prompt [0-9]* (' "$O/seam-check.txt" | tail -150
