#!/bin/sh
# Session 14, first device call: bia (fixed-chunk attention, bf16 KV default)
# merged into main; the check binary (go test -c -tags 'cuda cubinonly'
# ./gpu/cuda) at carry/final, the gocoder fixtures as carry/mx/m.tar.xz.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
xz -dc carry/final/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -)
M=/tmp/m
t0=$(date +%s)
run() { n=$1; s=$2; shift 2; t1=$(date +%s); timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1; r=$?; echo "exit $r" >> "$O/$n.txt"; echo "$n exit $r in $(( $(date +%s) - t1 )) s (at $(( $(date +%s) - t0 )) s)" | tee -a "$O/summary.txt"; }
run kv 60 -checks kv -models "$M"
run kvbench 70 -checks kvbench -models "$M"
run eagle 60 -checks eagletree,eagle -eagle8b=false -eagledevs cuda -models "$M"
run kernels 90 -checks kernels
(cd /tmp && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_DEBUG_FILE=/tmp/nccl.%p.log timeout 40 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks nccl -models "$M") > "$O/nccl.txt" 2>&1; echo "nccl exit $?" | tee -a "$O/summary.txt"
run head8b 30 -checks head8b
export RIGSCOPE_CUDA_TCW=fc:16; run head8b-fc16 30 -checks head8b; unset RIGSCOPE_CUDA_TCW
cd "$O" && tar czf final.tgz *.txt && rm -f kv.txt kvbench.txt eagle.txt kernels.txt nccl.txt head8b*.txt
