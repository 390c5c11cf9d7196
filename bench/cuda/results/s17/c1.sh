#!/bin/bash
# Session 17, call C1: eagle host times (eaglehost), attention plans on the gocoder pair (eagle check per plan).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c1/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-60} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el eaglehost
cc -checks eaglehost -models $M 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS"
for v in "base" "ATTCHUNK=64" "ATTCHUNK=128" "ATTCHUNK=0" "ATTCHUNK=0 ATTS=1" "ATTCHUNK=0 ATTS=2" "ATTCHUNK=0 ATTS=4" "ATTGROUP=1" "base"; do
  el "eagle $v"
  env $(for a in $v; do [ "$a" != base ] && echo RIGSCOPE_CUDA_$a; done) /tmp/cc -test.run TestCUDACheck -test.timeout 0 -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"
  grep -hE "cuda  |sum |target decode|graphs,|head chain k" $O/eagle.txt
done
el "eaglehost again"
cc -checks eaglehost -models $M 2>&1 | grep -E "tok/s|the rest|VerifyChain|Propose"
el done
