#!/bin/bash
# Session 43, call n4 (about 4 minutes): vl (vl.patch) against main. The attention's partials
# (pacc) move in 16-byte runs: ld_run / st_run instead of EPL scalar accesses a lane (n3's ncu:
# the merge's scalar __ldcg and the flush's scalar stores touched 4x the sectors they needed).
# Same values, same arithmetic: the bits must be main's. -checks kernels,kv runs while the
# Q4_K_M file is written (over 115 s on session 43's H100), then the speed and the `generate` md5s.
# carry/t6: cc.test.xz (carry/t5's), vl.cubin.xz.
# Carry ["carry/t6", "carry/rigscope-cuda.gz"] after `KEEP="s42 s43" sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n4
unpack carry/t6 cc.test vl.cubin; chmod -x /tmp/vl.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
q4km_start $B
checks vl
q4km_wait
for r in 1 2; do el "q4_k_m round $r"
  cb main X=1 "--model $F" $r; cb vl RIGSCOPE_CUDA_PTX=/tmp/vl.cubin "--model $F" $r; snap
done
el "generate"; gen main X=1; gen vl RIGSCOPE_CUDA_PTX=/tmp/vl.cubin
el end; snap
