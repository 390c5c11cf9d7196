#!/bin/bash
# Session 19, call D2: the greedy EAGLE-3 step kept on the device (cycle.go, kernels/cycle.cu).
# eaglehost: plain / cycle / host-driven in one process; eagle (engine path) with the cycle, then
# with RIGSCOPE_CUDA_EAGLECYCLE=0; then models, kv, eagletree, sample, ahead, kernels.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/d2/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-120} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL|Error" "$@" | head -8; }
el eaglehost; cc -checks eaglehost -models $M > $O/eaglehost.txt 2>&1; echo "exit $?"; bad $O/eaglehost.txt; grep -vE "^prompt|^=== RUN" $O/eaglehost.txt | head -40
el eagle; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; bad $O/eagle.txt; grep -hE "^cuda  |features|prompt|draft |decode time|tok/s per" $O/eagle.txt | head -30
el eagle-host; RIGSCOPE_CUDA_EAGLECYCLE=0 cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-host.txt 2>&1; echo "exit $?"; bad $O/eagle-host.txt; grep -hE "^cuda  |draft |decode time" $O/eagle-host.txt
el eagle2; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle2.txt 2>&1; echo "exit $?"; grep -hE "^cuda  |draft |decode time" $O/eagle2.txt
el models; cc -checks models,kv,eagletree,sample,ahead -models $M > $O/rest.txt 2>&1; echo "exit $?"; bad $O/rest.txt; grep -E "^--- |12/12|differ|trees|plain greedy decoding" $O/rest.txt | head -12
el kernels; cc -checks kernels > $O/kernels.txt 2>&1; echo "exit $?"; grep -E "^--- " $O/kernels.txt; grep -cE " ok" $O/kernels.txt; bad $O/kernels.txt
el done
