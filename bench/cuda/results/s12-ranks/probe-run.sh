#!/bin/sh
# ranks (issue 20), second probe: one rank per GPU on the step path, checked on one GPU.
# Fixtures (from /work/shared/models, carried as models/<same names>):
#   gocoder-14m-hf  reference-public.json  arch
# Kernels: carry/k90.cubin.xz (ptxas -arch=sm_90 -O3 of the branch's kernels_sm90.ptx; the PTX is main's).
# 1. -checks tp: TP 1/2/4/8, path shared and each (every rank opens the GPU as its own device:
#    the remote path of one rank per GPU); success = every row greedy=tp1 12/12, rc 0.
# 2. -checks allreduce: cuda.Group runs the step's kernels; float64 sum, 2/4/8 ranks,
#    shared/each, 1..64M floats; success = all <= 1e-5, rc 0.
# 3. RIGSCOPE_CUDA_RANKDEVS=each -checks arch,moe: TP 2 rows through the remote path.
# 4. -checks kv (KeepPath through onRanks).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
M=$P/models; [ -d "$M" ] || M=$P/carry/models
C=$P; [ -f "$C/cc.test.xz" ] || C=$P/carry
xz -dc "$C/cc.test.xz" > /tmp/ranks.test && chmod +x /tmp/ranks.test
xz -dc "$C/k90.cubin.xz" > /tmp/ranks90.cubin
export RIGSCOPE_CUDA_PTX=/tmp/ranks90.cubin
cd gpu/cuda 2>/dev/null || true
run() { # name timeout args...
	n=$1; s=$2; shift 2
	echo "$(date +%T) start $n"
	timeout "$s" /tmp/ranks.test -test.run TestCUDACheck -test.v -models "$M" "$@" > "$O/$n.txt" 2>&1
	echo "rc $?" >> "$O/$n.txt"
	tail -c 16000 "$O/$n.txt" > "$O/$n.t" && mv "$O/$n.t" "$O/$n.txt"
	echo "$(date +%T) done $n: $(tail -1 "$O/$n.txt")"
}
run tp 33 -checks tp
run allreduce 20 -checks allreduce
export RIGSCOPE_CUDA_RANKDEVS=each
run arch-each 15 -arch "$M/arch" -checks arch,moe
unset RIGSCOPE_CUDA_RANKDEVS
run kv 7 -checks kv
