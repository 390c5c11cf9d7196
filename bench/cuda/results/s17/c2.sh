#!/bin/bash
# Session 17, call C2: eaglehost at ctx 1024/2048, eagleprof (engine path) with a CPU profile, kvbench with 64-slot chunks, eagle at ATTCHUNK=64.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c2/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-90} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
for c in 1024 2048; do el "eaglehost ctx $c"; cc -checks eaglehost -eaglectx $c -models $M 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS\|^# cuda"; done
el "eagleprof engine default ctx"
cc -checks eagleprof -eaglectx 0 -eaglereps 20 -models $M -test.cpuprofile $O/prof-default.prof 2>&1 | grep eagleprof
el "eagleprof ctx 1024"
cc -checks eagleprof -eaglectx 1024 -eaglereps 20 -models $M -test.cpuprofile $O/prof-1024.prof 2>&1 | grep eagleprof
el "eagle ATTCHUNK=64"
RIGSCOPE_CUDA_ATTCHUNK=64 cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle64.txt 2>&1; echo "exit $?"
grep -hE "cuda  |sum |target decode|graphs," $O/eagle64.txt
el "kvbench"
cc -checks kvbench > $O/kvbench.txt 2>&1; echo "exit $?"; grep -E "^ctx|^512 |^4096 |T=1|T=5|bitwise|differ" $O/kvbench.txt | head -20
el done
