#!/bin/bash
# Session 31, call p5: the eagle check (gocoder pair, k=4 chain) with each model's weights kept in
# L2's set-aside for persisting accesses (bench/cuda/wip/l2keep-s31.patch: RIGSCOPE_CUDA_L2KEEP=MB, an access policy
# window over the span of the model's allocations on every launch; RIGSCOPE_CUDA_L2KEEPR its hit
# ratio; RIGSCOPE_CUDA_L2KEEPWHO=head: the head's alone, read five times a step), against none,
# alternating, two rounds. p4 put the cycle's gap on L2: a 96 MB memset
# before each replay costs the verify 9 us and the chain 11 us. Built here (that patch applied):
# go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda, xz into carry/p5;
# m.tar.xz as p2's. Carry ["carry/p5"].
. bench/cuda/call.sh; call_init p5; unpack carry/p5 cc.test; C=/tmp/cc.test
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|FAIL|rror" $O/x/eagle-$1.txt | head -8; }
for r in 1 2; do
  ea base-$r X=1; ea k48-$r RIGSCOPE_CUDA_L2KEEP=48; ea k48head-$r "RIGSCOPE_CUDA_L2KEEP=48 RIGSCOPE_CUDA_L2KEEPWHO=head"
done
el done; snap
