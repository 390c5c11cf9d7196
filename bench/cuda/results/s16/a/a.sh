#!/bin/bash
# Session 16, call A: tc pre-wait loads (pre.cubin) vs the embedded kernels (base) on the 8B decode and the 8B-shaped head;
# HEADCOPY A/B; eagle chain; ncu kernel durations of the llama-8b decode step (base).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/a.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/a/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc carry/a/pre.cubin.xz > /tmp/pre.cubin
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
cc() { timeout ${TO:-60} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "kernels pre"
RIGSCOPE_CUDA_PTX=/tmp/pre.cubin cc -checks kernels > $O/kernels-pre.txt 2>&1; echo "exit $?"; grep -c FAIL $O/kernels-pre.txt
for r in 1 2; do
  el "head8b base $r"; cc -checks head8b 2>&1 | grep -E "decode|draft step"
  el "head8b pre $r"; RIGSCOPE_CUDA_PTX=/tmp/pre.cubin cc -checks head8b 2>&1 | grep -E "decode|draft step"
done
el "headknobs"
cc -checks headknobs -headknobs "base;copy1 HEADCOPY=1;base2;copy2 HEADCOPY=1" 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS"
el "eagle base"
cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"
el "eagle pre"
RIGSCOPE_CUDA_PTX=/tmp/pre.cubin cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-pre.txt 2>&1; echo "exit $?"
el "eagle HEADCOPY=1"
RIGSCOPE_CUDA_HEADCOPY=1 cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-copy.txt 2>&1; echo "exit $?"
grep -hE "cuda  |sum |target decode|graphs,|head chain" $O/eagle.txt $O/eagle-pre.txt $O/eagle-copy.txt
el "ncu head8b"
timeout 150 ncu --clock-control none --graph-profiling node --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread,launch__block_size -c 1400 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -checks head8b > $O/ncu8b.csv 2> $O/ncu8b.err; echo "rc $?"
tail -3 $O/ncu8b.err; wc -l $O/ncu8b.csv
el done
