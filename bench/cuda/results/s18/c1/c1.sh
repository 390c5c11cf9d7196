#!/bin/bash
# Session 18, call C1: main's tree with the kernels regenerated (argmax_next): ahead, eaglehost, eagle,
# models, kv, sample, eagletree, kernels.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c1.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c1/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-150} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el ahead; cc -checks ahead -models $M > $O/ahead.txt 2>&1; echo "exit $?"; bad $O/ahead.txt; sed -n '/^plain greedy decoding through/,/^$/p' $O/ahead.txt
el eaglehost; cc -checks eaglehost -models $M > $O/eaglehost.txt 2>&1; echo "exit $?"; bad $O/eaglehost.txt; grep -E "tok/s|VerifyChain|ProposeOnDevice|Greedy|the rest|baseline" $O/eaglehost.txt
el eagle; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; bad $O/eagle.txt; grep -hE "^cuda  |features|verify of 5|graphs," $O/eagle.txt
el models; cc -checks models -models $M > $O/models.txt 2>&1; echo "exit $?"; grep -E "^--- |12/12|greedy" $O/models.txt | head -4; bad $O/models.txt
el kv; cc -checks kv -models $M > $O/kv.txt 2>&1; echo "exit $?"; grep -E "^--- |differ" $O/kv.txt | head -6; bad $O/kv.txt
el sample; cc -checks sample -models $M > $O/sample.txt 2>&1; echo "exit $?"; grep -E "^--- |tok/s" $O/sample.txt | head -6; bad $O/sample.txt
el eagletree; cc -checks eagletree -models $M > $O/eagletree.txt 2>&1; echo "exit $?"; grep -E "^--- |trees|sampled|12/12" $O/eagletree.txt | head -6; bad $O/eagletree.txt
el kernels; cc -checks kernels > $O/kernels.txt 2>&1; echo "exit $?"; grep -E "^--- " $O/kernels.txt; grep -cE " ok" $O/kernels.txt; bad $O/kernels.txt
el done
