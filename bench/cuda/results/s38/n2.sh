#!/bin/bash
# Session 38, call n2: the dp4a products' access pattern alone. `-checks quant -parts bandwidth`
# (each llama-8b product timed alone and with PDL, weights rotated past L2) for Q4_K and Q6_K with
# main's images, then with lo.cubin: main's kernels built with -DMQ_LOADONLY (quant_mv.cu: each
# unit's weight loads, every word used once by an xor, no arithmetic; garbage out). If the loads
# alone reach the read probe, the products lose bandwidth to their arithmetic and its latency; if
# not, to the access pattern itself. Carry ["carry/n2"] (cc.test: `go test -c -tags 'cuda
# cubinonly'` of main; lo.cubin: nvcc 11.8 -DMQ_LOADONLY, sm_90 ptx, then ptxas).
. bench/cuda/call.sh; call_init n2; unpack carry/n2 cc.test lo.cubin; chmod -x /tmp/lo.cubin; C=/tmp/cc.test
bw() { el "bandwidth $1"; timeout 100 env $2 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -bwtypes=Q4_K,Q6_K -bwsweep=false -bwmma=false > $O/x/bw-$1.txt 2>&1; echo "rc $?"
  grep -E "^(Q4_K|Q6_K|Q4_K_M) |pdl \(" $O/x/bw-$1.txt | head -40; }
bw main X=1; bw lo RIGSCOPE_CUDA_PTX=/tmp/lo.cubin
el done; snap
