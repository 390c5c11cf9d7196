#!/bin/bash
# Session 41, call t1: where the decode attention's time goes. tr.cubin is main's kernels built
# with -DATT_TRACE (every attention block stamps its phases: kernels/attention.cu att_trace);
# cc.test (go test -c -tags 'cuda cubinonly' ./gpu/cuda) runs -checks attntrace with it: graphed
# decode steps of the llama-8b shape (bf16 weights and cache) at 511 cached positions, the fixed
# chunks (default) and the split by length.
# Carry ["carry/t1"] (cc.test.xz, tr.cubin.xz) after `KEEP=s41 sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init t1
unpack carry/t1 cc.test tr.cubin; chmod -x /tmp/tr.cubin
el "attntrace"; timeout 300 env RIGSCOPE_CUDA_PTX=/tmp/tr.cubin /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -checks attntrace > $O/trace.txt 2>&1; echo "rc $?"
grep -E "^(##|launch:)|FAIL|rror" $O/trace.txt | head -40
el end
