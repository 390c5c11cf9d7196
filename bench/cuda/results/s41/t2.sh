#!/bin/bash
# Session 41, call t2: the grouped merge with its groups' loads in flight together (mg: kernels/
# attn_fixed.cu, n0..n2 in the grouped merge; the same arithmetic) against main's images.
# (a) the attention trace (-checks attntrace) with main's kernels (tr.cubin) and mg's (mgtr.cubin),
# both built with -DATT_TRACE; (b) -checks kernels,kv with mg.cubin (attention against float64,
# verify rows bitwise decode rows; kv's model part needs the gocoder files and fails here);
# (c) cuda-bench on the Q4_K_M llama-8b, main and mg alternating, two rounds; `generate` md5s.
# carry/t2: cc.test.xz, tr.cubin.xz, mg.cubin.xz, mgtr.cubin.xz; carry/rigscope-cuda.gz.
# Carry ["carry/t2", "carry/rigscope-cuda.gz"] after `KEEP=s41 sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init t2
unpack carry/t2 cc.test tr.cubin mg.cubin mgtr.cubin; chmod -x /tmp/*.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda; E=RIGSCOPE_CUDA_PTX=/tmp/mg.cubin
q4km_start $B
for v in tr mgtr; do el "trace $v"
  timeout 120 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks attntrace > $O/x/trace-$v.txt 2>&1; echo "rc $?"
  grep -E "^(##|launch:|merging)|FAIL|rror" $O/x/trace-$v.txt | head -24
done; snap
el "checks mg"; timeout 200 env $E $C -test.run TestCUDACheck -test.timeout 0 -checks kernels,kv > $O/x/chk-mg.txt 2>&1; echo "rc $?"
grep -cE " ok" $O/x/chk-mg.txt; grep -iE "^attention|fail|rror" $O/x/chk-mg.txt | head -20; snap
q4km_wait
for r in 1 2; do left 480 || break; el "q4_k_m round $r"; cb main X=1 "--model $F" $r; cb mg "$E" "--model $F" $r; snap; done
el "generate"; gen main X=1; gen mg "$E"
el end; snap
