#!/bin/bash
# Session 31, call p2: (a) `-checks kernels,kv` with the attention's pipelined merge (att_group_load
# a group ahead) and its RoPE tables loaded before pdl_wait (attn_fixed.cu): s30's new attention
# cases against float64, verify rows bitwise decode rows.
# (b) The eagle check (gocoder pair, k=4 chain), alternating, two rounds: the new images, s30's
# (RIGSCOPE_CUDA_PTX=old cubin), and the cycle experiments RIGSCOPE_CUDA_CYCLEGRAPH=1 (a step's verify
# and chain in one graph), =2 (with the verify's end event as a node inside it) and
# RIGSCOPE_CUDA_CYCLEHOST=0 (gather_feats' copy of the features to device scratch, not mapped host
# memory). Built here (cycle.patch applied, images regenerated): go test -c -tags 'cuda cubinonly'
# -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda, xz into carry/p2; old.cubin.gz is s30's
# kernels_sm90.cubin.gz; m.tar.xz is gocoder-14m-hf, gocoder-14m-eagle3 and reference-public.json.
# Carry ["carry/p2"].
. bench/cuda/call.sh; call_init p2; unpack carry/p2 cc.test; C=/tmp/cc.test
gunzip -c carry/p2/old.cubin.gz > /tmp/old.cubin
mkdir -p /tmp/m && tar xJf carry/p2/m.tar.xz -C /tmp/m
el "checks kernels,kv"
timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels,kv -models /nonexistent > $O/x/checks.txt 2>&1; echo "exit $?"
echo "ok lines $(grep -c ' ok' $O/x/checks.txt)"; grep -E -i "fail|panic|mismatch" $O/x/checks.txt | head -20
grep -E "^(f32|bf16) |^[0-9]+ +(f32|bf16)|attention kernels of a step|bitwise" $O/x/checks.txt | head -40
snap
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|FAIL" $O/x/eagle-$1.txt; }
for r in 1 2; do
  ea new-$r X=1; ea old-$r RIGSCOPE_CUDA_PTX=/tmp/old.cubin; ea graph2-$r RIGSCOPE_CUDA_CYCLEGRAPH=2
  ea graph1-$r RIGSCOPE_CUDA_CYCLEGRAPH=1; ea host-$r RIGSCOPE_CUDA_CYCLEHOST=0
done
el done; snap
