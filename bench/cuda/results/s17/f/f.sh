#!/bin/bash
# Session 17, final call F: the merged tree (embedded kernels regenerated; qglu's variants default, headout behind
# RIGSCOPE_CUDA_HEADOUT, spec runAhead): every kernel against float64, quant kernels and step products (defaultMQV
# against MQV=none), gocoder greedy, eagle (warm) HEADOUT 0/1, eaglehost (run-ahead A/B), head8b 0/1, eagletree.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/f.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/f/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
cc() { timeout ${TO:-60} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL" "$@" | head -6; }
el kernels; cc -checks kernels > $O/kernels.txt 2>&1; echo "exit $?"; grep -E "^--- " $O/kernels.txt; bad $O/kernels.txt
el "quant kernels"; cc -checks quant -parts kernels > $O/quant-kernels.txt 2>&1; echo "exit $?"; grep -E "^--- " $O/quant-kernels.txt; grep -E '^(Q[0-9]|Q4_K\+)' $O/quant-kernels.txt | grep -vE ' ok ok | ok$|= cpu ok|\(T=5\) ok' | head -5
el "quant bandwidth default vs none"; cc -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K,Q8_0 -bwsweep=false -bwmma=false -bwmqv=none > $O/quant-bw.txt 2>&1; echo "exit $?"
sed -n '/^llama-8b decode step at T=1 under each/,/^$/p' $O/quant-bw.txt; grep -E "^(Q8_0|Q4_K_M|Q6_K) +[0-9]+ +[0-9]+ " $O/quant-bw.txt
for v in 0 1; do el "eagle HEADOUT=$v"; RIGSCOPE_CUDA_HEADOUT=$v cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-$v.txt 2>&1; echo "exit $?"; bad $O/eagle-$v.txt
  grep -hE "^cuda  |sum |target decode|graphs,|^headout|^numerics|chain 5 rows 4 tokens" $O/eagle-$v.txt; done
el "eaglehost HEADOUT=1"; RIGSCOPE_CUDA_HEADOUT=1 cc -checks eaglehost -models $M 2>&1 | grep -E "tok/s|VerifyChain|ProposeOnDevice|the rest"
for v in 0 1; do el "head8b HEADOUT=$v"; RIGSCOPE_CUDA_HEADOUT=$v cc -checks head8b > $O/head8b-$v.txt 2>&1; echo "exit $?"; bad $O/head8b-$v.txt; grep -E "decode|draft step|^headout|^numerics" $O/head8b-$v.txt | head -8; done
el "models"; cc -checks models -models $M > $O/models.txt 2>&1; echo "exit $?"; grep -E "^--- |12/12|greedy" $O/models.txt | head -8; bad $O/models.txt
el "eagletree HEADOUT=1"; RIGSCOPE_CUDA_HEADOUT=1 cc -checks eagletree -models $M > $O/eagletree.txt 2>&1; echo "exit $?"; grep -E "^--- |trees|sampled|12/12" $O/eagletree.txt | head -6; bad $O/eagletree.txt
el done
