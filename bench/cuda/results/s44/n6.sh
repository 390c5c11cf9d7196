#!/bin/bash
# Session 44's refactor, for the next session (about 4 minutes): rf.patch moves the attention
# prologue that attn_body and attn_fixed each had a copy of (the q/k head norms, the query rows'
# RoPE, the new tokens' rotate-and-store) into attn_common.cu (att_norms, att_rope_q,
# att_store_new), with the rotation pinned for both (rot_lo, rot_hi: attn_fixed's form). The
# default (fixed) kernels should keep their bits; attn_body (the _len kernels, ATTCHUNK=0) now
# rounds the rotation as attn_fixed does, which its inline code left to the compiler.
# -checks kernels,kv with rf.cubin while the Q4_K_M file is written (every attention case against
# float64, the extensions included; every fixed plan's verify and tree rows bitwise decode's), then
# cuda-bench main against rf for two rounds and the `generate` md5s (main: 3e3705548a25e968...).
# carry/t8: cc.test.xz (carry/t7's, main at 86c2502), rf.cubin.xz. Carry ["carry/t8",
# "carry/rigscope-cuda.gz"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n6
unpack carry/t8 cc.test rf.cubin; chmod -x /tmp/rf.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
versus rf
