#!/bin/bash
# Session 43, call n3: session 42's n2 with pp added (about 8 minutes; ncu only if under 400 s by then). Attention variants
# against main's images, both keeping every row's arithmetic, so the bits must be main's:
#   sp (sp.patch): the fixed chunks' scores with K read once a block: a thread takes one slot for
#      4 query rows, so a warp's load reads 8 K rows instead of 32;
#   ms (ms.patch): the grouped merge stages a window of groups' partials in shared memory with
#      cp.async, one round trip a window (2 at 16 chunks) instead of one a group (4);
#   spms: both patches;
#   spv (spv.patch, sp's included): V read once a block too: thread tid owns column tid of all
#      the block's rows; p and each row's alpha reach it through shared memory.
#   pp (pp.patch): the query rows' positions and their cos/sin loaded before pdl_wait in attn_fixed,
#      so RoPE after the wait waits on qkv alone (one L2 round trip instead of two).
# (a) -checks kernels,kv with pp and spv (sp, ms, spms after b); (b) cuda-bench on the Q4_K_M
# llama-8b, main, sp, ms, spms, spv and pp alternating, two rounds; `generate` md5s; (c) the attention trace (-checks attntrace)
# with tr.cubin (main), sptr.cubin and mstr.cubin (-DATT_TRACE); (d) ncu's PC sampling of one
# graphed attn_128_1_kb_t1 launch of main (bf16 llama-8b, ctx 512): the source page per SASS
# instruction.
# carry/t5: cc.test.xz, tr.cubin.xz, sp.cubin.xz, sptr.cubin.xz, ms.cubin.xz, mstr.cubin.xz,
# spms.cubin.xz, spv.cubin.xz, pp.cubin.xz.
# Carry ["carry/t5", "carry/rigscope-cuda.gz"] after `KEEP="s42 s43" sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n3
unpack carry/t5 cc.test tr.cubin sp.cubin sptr.cubin ms.cubin mstr.cubin spms.cubin spv.cubin pp.cubin; chmod -x /tmp/*.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
q4km_start $B
# The checks of two variants overlap the file's writing; the speed comes next, the rest after it
# (the order that keeps the most if the call is cut short).
checks pp spv
q4km_wait
for r in 1 2; do el "q4_k_m round $r"
  cb main X=1 "--model $F" $r; cb sp RIGSCOPE_CUDA_PTX=/tmp/sp.cubin "--model $F" $r; cb ms RIGSCOPE_CUDA_PTX=/tmp/ms.cubin "--model $F" $r
  cb spms RIGSCOPE_CUDA_PTX=/tmp/spms.cubin "--model $F" $r; cb spv RIGSCOPE_CUDA_PTX=/tmp/spv.cubin "--model $F" $r; cb pp RIGSCOPE_CUDA_PTX=/tmp/pp.cubin "--model $F" $r; snap
done
el "generate"; gen main X=1; gen sp RIGSCOPE_CUDA_PTX=/tmp/sp.cubin; gen ms RIGSCOPE_CUDA_PTX=/tmp/ms.cubin; gen spms RIGSCOPE_CUDA_PTX=/tmp/spms.cubin
gen spv RIGSCOPE_CUDA_PTX=/tmp/spv.cubin; gen pp RIGSCOPE_CUDA_PTX=/tmp/pp.cubin
checks sp ms spms
attntrace tr sptr mstr
snap
left 400 && ncu_attn
el end; snap
