#!/bin/bash
# Session 34, call c2: the attention in clusters (RIGSCOPE_CUDA_ATTCLUSTER=4|8: a step of more
# than one chunk in at most CL groups is the first cluster's; each block keeps its group's partial
# in shared memory and block 0 merges them through distributed shared memory after a cluster
# barrier: no counter, no partials through L2 for the merge; with RIGSCOPE_CUDA_ATTFOLD=1 a
# decode's chunks are also combined into the group in shared memory as they end), with s33's ATTOWN (1, 2) and a2's
# evict-first weights in the same call. Images: new (this commit's, embedded in the binaries),
# old (the previous commit's sm_90 cubin: RIGSCOPE_CUDA_PTX=/tmp/old.cubin), ef (old + weights
# evict-first, -DWEIGHT_EVICT_FIRST=1). Bits: -checks kv with the new image (plans 32/g4/cl4,
# cl8, cl8f beside own1, own2; the kv bench times cl8 too), greedy and acceptance in the eagle checks,
# `generate` tokens on the synthetic 8B Q4_K_M for every setting. Speed, alternating, two
# rounds: the gocoder eagle check (plain, EAGLE-3, cycle step) and cuda-bench Q4_K_M (ctx 512);
# bf16 one round. Built here (not run in session 34: no machine came; the change is
# bench/cuda/wip/attncluster-s34.patch, carry/a5 on this machine holds its binaries):
#   git apply bench/cuda/wip/attncluster-s34.patch; cd kernels && go generate (or the nvcc/ptxas lines of kernels.go)
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .
#   xz both into carry/a5; the previous commit's kernels_sm90.cubin and /tmp/ef/ef.cubin (a2.sh)
#   xz'd into carry/c2. Carry ["carry/a5", "carry/c2", "carry/p5/m.tar.xz"], after `sh bench/cuda/aside.sh out`
#   (and `sh bench/cuda/aside.sh in` afterwards).
. bench/cuda/call.sh; call_init c2; unpack carry/a5 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
unpack carry/c2 old.cubin ef.cubin; chmod -x /tmp/old.cubin /tmp/ef.cubin
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
q4km_start $B
OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin; EF=RIGSCOPE_CUDA_PTX=/tmp/ef.cubin; CL8=RIGSCOPE_CUDA_ATTCLUSTER=8; CL4=RIGSCOPE_CUDA_ATTCLUSTER=4; CL8F="RIGSCOPE_CUDA_ATTCLUSTER=8 RIGSCOPE_CUDA_ATTFOLD=1"
OWN1=RIGSCOPE_CUDA_ATTOWN=1; OWN2=RIGSCOPE_CUDA_ATTOWN=2
el kv; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv.txt 2>&1; echo "rc $?"
grep -E "^(float32|bf16) |^ctx|^[0-9]+ |FAIL|rror" $O/x/kv.txt | head -40; snap
q4km_wait
el "q4_k_m round 1"; cb q4-old $OLD "--model $F" 1; cb q4-def X=1 "--model $F" 1; cb q4-cl8 $CL8 "--model $F" 1; cb q4-cl4 $CL4 "--model $F" 1; cb q4-cl8f "$CL8F" "--model $F" 1; cb q4-own1 $OWN1 "--model $F" 1; snap
el generate; gen def X=1; gen cl8 $CL8; gen cl4 $CL4; gen cl8f "$CL8F"; gen own1 $OWN1; gen old $OLD; snap
for r in 1 2; do ea def-$r X=1; ea cl8-$r $CL8; ea old-$r $OLD; done; snap
el "q4_k_m round 2"; cb q4-old $OLD "--model $F" 2; cb q4-def X=1 "--model $F" 2; cb q4-cl8 $CL8 "--model $F" 2; cb q4-cl4 $CL4 "--model $F" 2; cb q4-cl8f "$CL8F" "--model $F" 2; cb q4-own1 $OWN1 "--model $F" 2; snap
ea cl4 $CL4; ea cl8f "$CL8F"; ea own1 $OWN1; ea own2 $OWN2; ea ef $EF; snap
left 420 && { el ef; gen ef $EF; cb q4-ef $EF "--model $F" 1; cb q4-def X=1 "--model $F" 3; snap; }
left 480 && { el bf16; cb bf16-def X=1 "--shapes llama-8b" 1; cb bf16-cl8 $CL8 "--shapes llama-8b" 1; }
el done; snap
