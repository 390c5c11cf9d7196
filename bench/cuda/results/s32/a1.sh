#!/bin/bash
# Session 32, call a1: what each kind of kernel costs inside the gocoder EAGLE-3 cycle's graphs.
# The eagle check (gocoder pair, k=4 chain) once per RIGSCOPE_CUDA_SKIP=kind, which leaves that
# kind's launches out of every graph (garbage tokens: only the check's graph timings count), and
# the default at the start and the end. Its row "graphs, device time per replay back to back"
# gives decode, verify of 5 (capture) and the chain of 5 rows and 4 tokens; a kind's cost in a
# graph is the default's time less the time without it. Binary and models: session 31's carry/p5
# (cc.test built from main with s31's wip/l2keep-s31.patch, now results/s32/l2keep.patch, whose knobs are off unless set: main's
# behaviour). Carry ["carry/p5"] with kernels/*.gz moved out of the tree.
. bench/cuda/call.sh; call_init a1; unpack carry/p5 cc.test; C=/tmp/cc.test
mkdir -p /tmp/m && tar xJf carry/p5/m.tar.xz -C /tmp/m
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device" $O/x/eagle-$1.txt | head -3; }
ea base-1 X=1
for k in attention qkv wo gate_up down output argmax embed capture headout fc eagle_in gather copy_row; do
  ea skip-$k RIGSCOPE_CUDA_SKIP=$k
done
ea base-2 X=1
el done; snap
