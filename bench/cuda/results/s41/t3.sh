#!/bin/bash
# Session 41, call t3: t2.sh trimmed to the device time left (about 3 minutes): the attention
# trace with main's kernels and mg's (both -DATT_TRACE), -checks kv (its kernel rows: verify rows
# and stored slots bitwise decode's; the model part needs the gocoder files and fails here), then
# cuda-bench on the Q4_K_M llama-8b, main and mg alternating, and `generate` md5s (mg's merge
# does the same arithmetic, so the tokens must be main's).
# Carry ["carry/t2", "carry/rigscope-cuda.gz"] after `KEEP=s41 sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init t3
unpack carry/t2 cc.test tr.cubin mg.cubin mgtr.cubin; chmod -x /tmp/*.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda; E=RIGSCOPE_CUDA_PTX=/tmp/mg.cubin
q4km_start $B
for v in tr mgtr; do el "trace $v"
  timeout 60 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks attntrace > $O/trace-$v.txt 2>&1; echo "rc $?"
  grep -E "^(launch:|merging)|FAIL|rror" $O/trace-$v.txt | head -10
done
el "kv rows mg"; timeout 60 env $E $C -test.run TestCUDACheck -test.timeout 0 -checks kv > $O/x/kv-mg.txt 2>&1; echo "rc $?"
grep -E "^(f32|bf16) " $O/x/kv-mg.txt | head -20; snap
q4km_wait
for r in 1 2; do left 150 || break; el "q4_k_m round $r"; cb main X=1 "--model $F" $r; cb mg "$E" "--model $F" $r; snap; done
left 170 && { el "generate"; gen main X=1; gen mg "$E"; }
el end; snap
