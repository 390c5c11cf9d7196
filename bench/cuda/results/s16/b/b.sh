#!/bin/bash
# Session 16, call B: the new kernels (tc first tiles before pdl_wait, the grouped attention merge in one round trip)
# embedded in cc.test: correctness checks, then A/B against main's kernels (/tmp/base.cubin) on the 8B decode.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/b.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/b/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
xz -dc carry/b/base.cubin.xz > /tmp/base.cubin
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-90} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el kernels; cc -checks kernels > $O/kernels.txt 2>&1; echo "exit $?"; grep -c " ok" $O/kernels.txt; grep -iE "fail|mismatch" $O/kernels.txt | head -5
el kv; cc -checks kv -models $M > $O/kv.txt 2>&1; echo "exit $?"; grep -E "bitwise|12/12|FAIL" $O/kv.txt | head -8
el eagle; cc -checks eagletree,eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"; grep -E "cuda  |tree k|sampled chain k|graphs,|FAIL" $O/eagle.txt | head -8
for r in 1 2; do
  el "kvbench new $r"; cc -checks kvbench > $O/kvbench-new$r.txt 2>&1; grep -E "^512 |^4096 |T=1|T=5" $O/kvbench-new$r.txt | head -12
  el "kvbench base $r"; RIGSCOPE_CUDA_PTX=/tmp/base.cubin cc -checks kvbench > $O/kvbench-base$r.txt 2>&1; grep -E "^512 |^4096 |T=1|T=5" $O/kvbench-base$r.txt | head -12
done
for r in 1 2; do
  el "head8b new $r"; cc -checks head8b 2>&1 | grep -E "decode [0-9]|draft step"
  el "head8b base $r"; RIGSCOPE_CUDA_PTX=/tmp/base.cubin cc -checks head8b 2>&1 | grep -E "decode [0-9]|draft step"
done
el headknobs; cc -checks headknobs -headknobs "base;len ATTCHUNK=0;base2;len2 ATTCHUNK=0" 2>&1 | grep -E "one step|kernels:"
el "eagle ATTCHUNK=0"; RIGSCOPE_CUDA_ATTCHUNK=0 cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-len.txt 2>&1; echo "exit $?"; grep -E "cuda  |graphs," $O/eagle-len.txt
el done
