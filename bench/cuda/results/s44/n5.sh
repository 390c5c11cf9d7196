#!/bin/bash
# Session 44, call n5 (about 3 minutes): main with vl landed (the images regenerated), checked
# through the embedded image, no RIGSCOPE_CUDA_PTX: -checks kernels,kv while the Q4_K_M file is
# written, then cuda-bench for two rounds and the `generate` md5 (session 43's main and n4's vl
# gave 3e3705548a25e968dbc21a649f5dcc2d).
# carry/t7: cc.test.xz built from this tree. Carry ["carry/t7", "carry/rigscope-cuda.gz",
# "carry/llamacpp-cuda"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n5
unpack carry/t7 cc.test
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
q4km_start $B
el "checks embedded"
timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks kernels,kv > $O/x/chk-emb.txt 2>&1; echo "rc $?"
grep -cE " ok" $O/x/chk-emb.txt; grep -E "^(float32|bf16) |FAIL" $O/x/chk-emb.txt | head -24; snap
q4km_wait
for r in 1 2; do el "q4_k_m round $r"; cb main X=1 "--model $F" $r; snap; done
el "generate"; gen main X=1
el end; snap
