#!/bin/bash
# Session 32, call a2: the cross-block handshakes of the argmax kernels (argmax_rows, _next, _d2t,
# argmax_accept's rows) and of the fused draft token (tcnam*) as one acq_rel atomic (arrive_last,
# atom_add_acq_rel) instead of __threadfence + atomicAdd + __threadfence: the same bits, less
# waiting on the step's critical path. The eagle check (gocoder pair, k=4 chain) with the new
# images (embedded in cc.test) against main's (RIGSCOPE_CUDA_PTX=old.cubin), alternating, two
# rounds; then -checks kernels,sample with the new ones. Built here: kernels regenerated (nvcc
# 11.8), go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda, xz into
# carry/a2; carry/a2/old.cubin.gz is main's kernels/kernels_sm90.cubin.gz; m.tar.xz is s31's.
# Carry ["carry/a2", "carry/p5/m.tar.xz"] with kernels/*.gz moved out of the tree.
. bench/cuda/call.sh; call_init a2; unpack carry/a2 cc.test; C=/tmp/cc.test
gunzip -c carry/a2/old.cubin.gz > /tmp/old.cubin
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|on tokens equal|FAIL|rror" $O/x/eagle-$1.txt | head -8; }
for r in 1 2; do ea new-$r X=1; ea old-$r RIGSCOPE_CUDA_PTX=/tmp/old.cubin; done
el "kernels,sample"; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels,sample -models /tmp/m > $O/x/checks.txt 2>&1; echo "rc $?"
grep -c "^ok\| ok" $O/x/checks.txt; grep -E "FAIL|rror|mismatch" $O/x/checks.txt | head -20; tail -3 $O/x/checks.txt
el done; snap
