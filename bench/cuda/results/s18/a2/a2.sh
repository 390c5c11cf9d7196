#!/bin/bash
# Session 18, call A2: steps enqueued ahead with argmax_next (no copies for a fed step), kernels from this
# tree's cubin (carry/ah/k.cubin.xz). ahead A/B, eaglehost, eagle, models, kv (decode rows = verify rows).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/a2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/ah/cc.test.xz > /tmp/cc && chmod +x /tmp/cc; xz -dc carry/ah/k.cubin.xz > /tmp/k.cubin
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
export RIGSCOPE_CUDA_PTX=/tmp/k.cubin
cc() { timeout ${TO:-150} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el ahead; cc -checks ahead -models $M > $O/ahead.txt 2>&1; echo "exit $?"; bad $O/ahead.txt; sed -n '/^plain greedy decoding through/,/^$/p' $O/ahead.txt
el eaglehost; cc -checks eaglehost -models $M > $O/eaglehost.txt 2>&1; echo "exit $?"; bad $O/eaglehost.txt; grep -E "tok/s|VerifyChain|ProposeOnDevice|Greedy|ForwardIDs T=1|the rest|baseline" $O/eaglehost.txt
el eagle; cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; bad $O/eagle.txt; grep -hE "^cuda  |features|verify of 5" $O/eagle.txt
el models; cc -checks models -models $M > $O/models.txt 2>&1; echo "exit $?"; grep -E "^--- |12/12|greedy" $O/models.txt | head -4; bad $O/models.txt
el kv; cc -checks kv -models $M > $O/kv.txt 2>&1; echo "exit $?"; grep -E "^--- |differ" $O/kv.txt | head -8; bad $O/kv.txt
el sample; cc -checks sample -models $M > $O/sample.txt 2>&1; echo "exit $?"; grep -E "^--- " $O/sample.txt; bad $O/sample.txt
el done
