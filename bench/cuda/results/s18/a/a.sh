#!/bin/bash
# Session 18, call A: plain greedy steps enqueued ahead (gpu/cuda/ahead.go). ahead (tokens equal, rates
# ahead vs one at a time, gocoder + llama-8b shape), eaglehost (host times; in-run baseline vs plain),
# eagle (engine path, warm), models (gocoder greedy = CPU).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/a.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/ah/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-120} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el ahead; cc -checks ahead -models $M > $O/ahead.txt 2>&1; echo "exit $?"; bad $O/ahead.txt; sed -n '/^plain greedy decoding through/,/^$/p' $O/ahead.txt
el eaglehost; cc -checks eaglehost -models $M > $O/eaglehost.txt 2>&1; echo "exit $?"; bad $O/eaglehost.txt; grep -E "tok/s|VerifyChain|ProposeOnDevice|Greedy|ForwardIDs T=1|the rest|baseline" $O/eaglehost.txt
el eagle; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; bad $O/eagle.txt; grep -hE "^cuda  |features" $O/eagle.txt
el models; cc -checks models -models $M > $O/models.txt 2>&1; echo "exit $?"; grep -E "^--- |12/12|greedy" $O/models.txt | head -6; bad $O/models.txt
el done
