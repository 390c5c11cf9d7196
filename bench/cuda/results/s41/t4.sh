#!/bin/bash
# Session 41 (for the next session), call t4: two attention variants against main's images.
#   mg (mg.patch): the grouped merge's group loads in flight together;
#   tp (tp.patch): the tail block's cached slots loaded before pdl_wait (_t1 and _ch kernels),
#                  only its new slots after the prologue (KVChunk::load_rest).
# Both keep every row's arithmetic, so the bits must be main's.
# (a) the attention trace (-checks attntrace) with tr.cubin (main), mgtr.cubin and tptr.cubin,
#     all built with -DATT_TRACE;
# (b) -checks kernels,kv with mg.cubin and tp.cubin (attention against float64, verify rows and
#     slots bitwise decode's; kv's model part needs the gocoder files and fails here);
# (c) cuda-bench on the Q4_K_M llama-8b: main, mg and tp alternating, two rounds; `generate`
#     md5s (must all be main's).
# carry/t4: cc.test.xz, tr.cubin.xz, mg.cubin.xz, mgtr.cubin.xz, tp.cubin.xz, tptr.cubin.xz.
# Carry ["carry/t4", "carry/rigscope-cuda.gz"] after `KEEP=s41 sh bench/cuda/aside.sh out`.
# About 5 minutes on a warm machine.
. bench/cuda/call.sh; call_init t4
unpack carry/t4 cc.test tr.cubin mg.cubin mgtr.cubin tp.cubin tptr.cubin; chmod -x /tmp/*.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
q4km_start $B
for v in tr mgtr tptr; do el "trace $v"
  timeout 60 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks attntrace > $O/trace-$v.txt 2>&1; echo "rc $?"
  grep -E "^(launch:|merging)|FAIL|rror" $O/trace-$v.txt | head -10
done
for v in mg tp; do el "checks $v"
  timeout 240 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks kernels,kv > $O/x/chk-$v.txt 2>&1; echo "rc $?"
  grep -cE " ok" $O/x/chk-$v.txt; grep -E "^(f32|bf16) |FAIL" $O/x/chk-$v.txt | head -24; snap
done
q4km_wait
for r in 1 2; do left 480 || break; el "q4_k_m round $r"
  cb main X=1 "--model $F" $r; cb mg RIGSCOPE_CUDA_PTX=/tmp/mg.cubin "--model $F" $r; cb tp RIGSCOPE_CUDA_PTX=/tmp/tp.cubin "--model $F" $r; snap
done
left 540 && { el "generate"; gen main X=1; gen mg RIGSCOPE_CUDA_PTX=/tmp/mg.cubin; gen tp RIGSCOPE_CUDA_PTX=/tmp/tp.cubin; }
el end; snap
