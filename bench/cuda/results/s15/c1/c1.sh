#!/bin/sh
# Session 15, call 1: the merged tree's checks (embedded cubin) and kvbench against main's kernels (base cubin).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
xz -dc carry/final/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc carry/attn/base.cubin.xz > /tmp/base.cubin
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -)
M=/tmp/m
t0=$(date +%s)
run() { n=$1; s=$2; shift 2; t1=$(date +%s); timeout "$s" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@" > "$O/$n.txt" 2>&1; r=$?; echo "exit $r" >> "$O/$n.txt"; echo "$n exit $r in $(( $(date +%s) - t1 )) s (at $(( $(date +%s) - t0 )) s)" | tee -a "$O/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > "$O/gpu.txt" 2>&1
run kernels 60 -checks kernels
run kv 60 -checks kv -models "$M"
run kvbench 60 -checks kvbench
RIGSCOPE_CUDA_PTX=/tmp/base.cubin run kvbench-base 60 -checks kvbench
run eagle 60 -checks eagletree,eagle -eagle8b=false -eagledevs cuda -models "$M"
run head8b 30 -checks head8b
RIGSCOPE_CUDA_PTX=/tmp/base.cubin run head8b-base 30 -checks head8b
run tp 60 -checks tp -models "$M"
cd "$O" && tar czf c1.tgz *.txt
grep -hE "exit|bitwise|tok/s|decode|one draft|accept|12/12|FAIL" summary.txt kv.txt head8b.txt head8b-base.txt | head -60
