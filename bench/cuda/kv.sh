#!/bin/sh
# Issue 19's bf16 KV cache (the default) and batch-invariant attention in
# one device call (about a minute): cuda-check -checks
# kernels,pfkernels,kv,kvbench: every kernel against float64, the
# attention (every plan) and prefill kernels with a bf16 cache among them
# (names with "kv bf16" and pf_kv_kb); a verify launch against decode
# launches of each node's path, bitwise with fixed chunks; gocoder-14m-hf
# with a bf16 cache against a float32 one (greedy vs the reference,
# teacher-forced logits, verify/tree/KeepPath and stored slots = decode's,
# prefill path vs the 16-token path); the llama-8b shape's verify = decode
# and decode tok/s with each cache and attention plan at 512 and 4096.
# ARCH=DIR adds the arch fixtures run with RIGSCOPE_CUDA_KV=bf16 (carry
# them as bench/cuda/README.md says: about 23 MB more).
# Build here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && xz -9 -f carry/cuda-check.test
#             mkdir -p carry/m3 && cp -al ../shared/models/{gocoder-14m-hf,reference-public.json} carry/m3/
# Run there:  sh bench/cuda/kv.sh   (carry ["carry/m3", "carry/cuda-check.test.xz"])
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
B=/tmp/cuda-check.test
if [ -f carry/cuda-check.test.xz ]; then xz -dc carry/cuda-check.test.xz > $B; else gunzip -c carry/cuda-check.test.gz > $B; fi
chmod +x $B
timeout ${T_CHECK:-150} $B -test.run TestCUDACheck -test.timeout 0 -models ${MODELS:-carry/m3} \
	-checks ${CHECKS:-kernels,pfkernels,kv,kvbench} > "$O/kv-check.txt" 2> "$O/kv-check.err"
echo "exit status $?" >> "$O/kv-check.txt"
if [ -n "${ARCH:-}" ]; then
	RIGSCOPE_CUDA_KV=bf16 timeout 120 $B -test.run TestCUDACheck -test.timeout 0 -models ${MODELS:-carry/m3} -arch "$ARCH" \
		-checks arch > "$O/kv-arch.txt" 2>&1
	echo "exit status $?" >> "$O/kv-arch.txt"
fi
grep -vE ' ok$' "$O/kv-check.txt"; grep -cE ' ok$' "$O/kv-check.txt" | sed 's/$/ kernel checks ok/'
grep -E 'kv bf16|_kb' "$O/kv-check.txt" | head -8
tail -5 "$O/kv-check.err"
[ -n "${ARCH:-}" ] && cat "$O/kv-arch.txt"
exit 0
