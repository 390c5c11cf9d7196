#!/bin/bash
# Session 20, call H4: the fused chain with its arguments and step parameters in shared memory.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/h4.txt) 2>&1
xz -dc carry/h4/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc carry/h4/k.cubin.xz > /tmp/k.cubin; export RIGSCOPE_CUDA_PTX=/tmp/k.cubin
(cd /tmp && xz -dc "$OLDPWD/carry/h4/m.tar.xz" | tar xf -); M=/tmp
cc() { timeout ${TO:-150} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; grep -hE "panic|FAIL|rror" $O/eagle.txt | head -5
grep -hE "^cuda  |chain16|phases|draft |decode time" $O/eagle.txt | head -20
