#!/bin/bash
# Session 16, call Q (warm after B): the qpipe helper's run.sh (base vs new vs pipe quant products).
xz -dc carry/b/base.cubin.xz > /tmp/base.cubin
O=${OUT:-/tmp/out}; mkdir -p $O
bash carry/qpipe/run.sh 2>&1 | tee $O/q.txt | tail -60
