#!/bin/sh
# Issue 19's EAGLE-3 rows in one device call: `cuda-check -checks eagle`
# (gocoder-14m-hf + gocoder-14m-eagle3, k=4 greedy chain on the 12 public
# prompts, CUDA and CPU; the step parts with each graph's device time; the
# product steps' host-time breakdown; the 8B-shaped head) with the defaults,
# then with the chain read back before the verify (RIGSCOPE_CUDA_EAGLEPIPE=0,
# two synchronizes a step: the path before session 12) and without PDL.
# Build here:
#   go test -c -tags cuda -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/m2 && cp -al ../shared/models/gocoder-14m-hf ../shared/models/gocoder-14m-eagle3 ../shared/models/reference-public.json carry/m2/
# Run there:  sh bench/cuda/eagle.sh   (carry ["carry/m2", "carry/cuda-check.test.gz"]; about a minute)
# Success: the cuda row of the eagle3 table with accepts=ref 12/12, mean len
# 3.2576, =greedy 12/12, and eagle tok/s >= 1.5x plain tok/s; "--- PASS".
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
run() { # $1: output name
	timeout ${T_CHECK:-120} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -test.v \
		-models ${MODELS:-carry/m2} -checks eagle > "$O/$1.txt" 2>&1
	echo "exit status $?" >> "$O/$1.txt"
}
run eagle-check
(export RIGSCOPE_CUDA_EAGLEPIPE=0; run eagle-check-nopipe)
(export RIGSCOPE_CUDA_PDL=0; run eagle-check-nopdl)
for f in eagle-check eagle-check-nopipe eagle-check-nopdl; do
	echo "== $f"; grep -v '^prompt [0-9]* (' "$O/$f.txt" | grep -v '^gocoder-14m\.\|^gocoder-draft' | tail -24
done
