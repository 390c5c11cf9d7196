#!/bin/bash
# Session 28, call n1: the Q4_K x Q8_K tensor-core products (kernels/quant_mqk.cu, experimental):
# -checks quant -parts mqk: qk_x bitwise the CPU's Q8_K, every variant against float64 and T=k rows
# bitwise T=1, then their times beside the dp4a kernels on llama-8b's shapes (PDL).
# carry/n1: cc.test.xz (go test -c -tags 'cuda cubinonly', main's images).
. bench/cuda/call.sh; call_init n1
C=carry/n1
unpack $C cc.test
el "checks quant mqk"
timeout 400 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "exit $?"
grep -vE "^(=== |--- )" $O/x/mqk.txt | head -150
el done
snap; rm -rf $O/x
