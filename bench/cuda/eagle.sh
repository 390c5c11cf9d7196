#!/bin/sh
# Issue 19's EAGLE-3 rows in one device call: `cuda-check -checks eagle`
# (gocoder-14m-hf + gocoder-14m-eagle3, k=4 greedy chain on the 12 public
# prompts, CUDA and CPU; the step parts with each graph's device time; the
# product steps' host-time breakdown; the 8B-shaped head), then the CUDA rows
# alone with each session-12 change turned off: the chain read back before
# the verify (RIGSCOPE_CUDA_EAGLEPIPE=0, two synchronizes a step), eagle_in
# as its own kernel (RIGSCOPE_CUDA_EAGLEIN=0), the features copied by
# memcpy nodes (RIGSCOPE_CUDA_CAPK=0), and no PDL.
# Build here (the embedded sm_90 cubin spares the driver's JIT of the PTX,
# ~40 s a fresh process on the H200):
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   mkdir -p carry/m2 && cp -al ../shared/models/gocoder-14m-hf ../shared/models/gocoder-14m-eagle3 ../shared/models/reference-public.json carry/m2/
# Run there:  sh bench/cuda/eagle.sh   (carry ["carry/m2", "carry/cuda-check.test.gz"]; about a minute)
# Success: the cuda row of the eagle3 table with accepts=ref 12/12, mean len
# 3.2576, =greedy 12/12, and eagle tok/s >= 1.5x plain tok/s; "--- PASS".
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test
run() { # $1: output name, then extra flags
	n=$1; shift
	echo "$(date +%T) $n"
	timeout ${T_CHECK:-150} /tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0 -test.v \
		-models ${MODELS:-carry/m2} -checks eagle "$@" > "$O/$n.txt" 2>&1
	echo "exit status $?" >> "$O/$n.txt"
}
run eagle-check
(export RIGSCOPE_CUDA_EAGLEPIPE=0; run eagle-nopipe -eagledevs cuda -eagle8b=false)
(export RIGSCOPE_CUDA_EAGLEIN=0; run eagle-noinfold -eagledevs cuda -eagle8b=false)
(export RIGSCOPE_CUDA_CAPK=0; run eagle-nocapk -eagledevs cuda -eagle8b=false)
(export RIGSCOPE_CUDA_PDL=0; run eagle-nopdl -eagledevs cuda -eagle8b=false)
for f in eagle-check eagle-nopipe eagle-noinfold eagle-nocapk eagle-nopdl; do
	echo "== $f"; grep -v '^prompt [0-9]* (' "$O/$f.txt" | tail -24
done
