#!/bin/sh
# FP8 (e4m3) on the GPU (issue 23) in one device call, about 1.5 minutes:
#  1. cuda-check -checks fp8: mv_f8/mvn_f8/glu_f8 vs float64 on random e4m3
#     bytes in each scale layout (per-tensor, per-channel, 128x128 blocks,
#     a qkv stack), T = 1..16, NaN-poisoned outputs, T=k rows bitwise the
#     T=1 run; embed_f8 = the CPU bitwise; the products' bandwidth on
#     llama-8b's shapes; gocoder-14m-hf written as FP8 in each scheme
#     (quant.WriteFP8) decoded on the GPU vs the CPU engine, and verify(15)
#     vs 15 decode steps.
#  2. cuda-bench --dtype f8_e4m3 --shapes llama-8b: a whole llama-8b decode
#     step with e4m3 layer matrices and 128x128 block scales (synthetic, on
#     the device; embedding and output bf16, as FP8 releases keep lm_head),
#     tok/s against the read-bandwidth bound of the bytes a step reads.
# Build here:
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/fp8m && cp -r ../shared/models/gocoder-14m-hf ../shared/models/reference-public.json carry/fp8m/   (or MODELS=carry/m2)
# Run there:   sh bench/cuda/fp8.sh   (carry ["carry/fp8m", "carry/rigscope-cuda.gz", "carry/cuda-check.test.gz"])
# Success: check.txt ends in "--- PASS: TestCUDACheck" (every row "ok");
# bench-f8_e4m3.txt's llama-8b row "of bound" is the FP8 step's share of its bound
# (the target: >= 75%). Knobs: DTYPES (default "f8_e4m3"; add bf16
# for the same call's bf16 row), MODELS, T_CHECK, T_BENCH.
set -u
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test; C="/tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -test.v"
O=${OUT:-/tmp/out}; mkdir -p "$O"
timeout ${T_CHECK:-150} $C -models ${MODELS:-carry/fp8m} -checks fp8 > "$O/check.txt" 2>&1
echo "cuda-check fp8: exit $?"
for dt in ${DTYPES:-f8_e4m3}; do
	timeout ${T_BENCH:-120} $B cuda-bench --shapes llama-8b --tp 1 --dtype "$dt" > "$O/bench-$dt.txt" 2>&1
	echo "cuda-bench $dt: exit $?"
done
grep -v "^prompt " "$O/check.txt" | tail -60
cat "$O"/bench-*.txt
