#!/bin/sh
# Issue 23, session 12: the quantized and FP8 products' checks and tables in
# one device call, with A/B knobs, and Q4_K_M decode end to end.
#   1. cuda-check rates,quant,fp8,kernels (parts kernels, mma, bandwidth;
#      no fixtures): correctness of every quantized, FP8 and bf16 kernel
#      (float64, T=k = T=1 bitwise), the int8 tensor-core Q4_K products
#      (mma), instruction rates, and the bandwidth tables with plain and PDL
#      rows (no L2 prefetch: the default since the final s12 tables).
#   2. the same tables with RIGSCOPE_CUDA_L2PF=1 (weights prefetched into L2
#      before pdl_wait): the A/B.
#   3. with MODELS (a folder with gocoder-14m.Q8_0.gguf, gocoder-14m-hf and
#      reference-public.json, as session 11's carry/m3): the quant and fp8
#      checks' model parts (greedy vs the CPU and the reference; Q4_K_M and
#      Q4_0 written from the Q8_0 file), plain and with RIGSCOPE_CUDA_MQM=1.
#   4. bench/cuda/quant-mqm.sh: generate on llama-8b Q4_K_M, dp4a vs the
#      int8 tensor cores (RIGSCOPE_CUDA_MQM=1), and dp4a without prefetch.
# Build here:
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && xz -9 -T2 -f carry/cuda-check.test
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:  sh bench/cuda/quant-s12.sh   (carry ["carry/cuda-check.test.xz", "carry/rigscope-cuda.gz"])
# Under the 10-minute limit of a call: E2E=0 leaves step 4 out, for a
# second call on the warm machine (L2PF_AB=1 sh bench/cuda/quant-mqm.sh).
# The first process JIT-compiles the PTX (about a minute or more, no output
# meanwhile); the cache below lets the later ones start at once.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
export CUDA_CACHE_PATH=/tmp/nvcache CUDA_CACHE_MAXSIZE=4294967296
xz -dc carry/cuda-check.test.xz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
C="/tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0"
t0=$(date +%s)
timeout 420 $C -checks rates,quant,fp8,kernels -parts kernels,mma,bandwidth -bwsweep=false > "$O/quant-s12-check.txt" 2>&1
echo "check: exit $? in $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
RIGSCOPE_CUDA_L2PF=1 timeout 240 $C -checks quant,fp8 -parts bandwidth -bwsweep=false -bwmma=false > "$O/quant-s12-l2pf.txt" 2>&1
echo "prefetch tables: exit $? in $(( $(date +%s) - t0 )) s"
grep -E "FAIL|^--- |^ok|^PASS|instruction rates|^rate_|^(mv|mv\+add|glu\+norm|mv\+norm|geglu\+norm) |Q4_K plain products|^(qkv|wo|gate|down) |T=1 +[0-9.]+ us plain|^file |^Q4_K_M|^Q8_0 |^Q4_0 |32 FP8 layers" "$O/quant-s12-check.txt" | head -120
echo "== with the L2 prefetch (RIGSCOPE_CUDA_L2PF=1)"
grep -E "FAIL|T=1 +[0-9.]+ us plain|^file |^Q4_K_M|^Q8_0 |^Q4_0 |32 FP8 layers" "$O/quant-s12-l2pf.txt" | head -40
if [ -n "${MODELS:-}" ]; then
	for k in 0 1; do
		t0=$(date +%s)
		RIGSCOPE_CUDA_MQM=$k timeout 300 $C -checks quant,fp8 -parts models -models "$MODELS" > "$O/quant-s12-models-mqm$k.txt" 2>&1
		echo "== models, RIGSCOPE_CUDA_MQM=$k: exit $? in $(( $(date +%s) - t0 )) s"
		grep -vE "^prompt [0-9]+ \(" "$O/quant-s12-models-mqm$k.txt" | grep -E "FAIL|gguf|gocoder|tokens|^---|^ok|PASS" | head -20
	done
fi
[ "${E2E:-1}" = 1 ] && L2PF_AB=1 sh bench/cuda/quant-mqm.sh
exit 0
