#!/bin/bash
# Session 20, call D8: attention knobs on the gocoder EAGLE-3 cycle (eagle check, engine path):
# the default, then ATTROWS=4, ATTGROUP=1, ATTS=1/2/4, ATTMIN=64, then the default again.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d8.txt) 2>&1
xz -dc carry/d8/cc.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/d8/m.tar.xz" | tar xf -); M=/tmp
run() { local n=$1; shift; env "$@" timeout 120 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-$n.txt 2>&1
  echo "$n exit $?: $(grep -hE '^cuda  ' $O/eagle-$n.txt)"; grep -hE "^graphs" $O/eagle-$n.txt; }
run default X=1
run rows4 RIGSCOPE_CUDA_ATTROWS=4
run group1 RIGSCOPE_CUDA_ATTGROUP=1
run s1 RIGSCOPE_CUDA_ATTS=1
run s2 RIGSCOPE_CUDA_ATTS=2
run s4 RIGSCOPE_CUDA_ATTS=4
run min64 RIGSCOPE_CUDA_ATTMIN=64
run default2 X=1
