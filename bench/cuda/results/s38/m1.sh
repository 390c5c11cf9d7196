#!/bin/bash
# Session 38, call m1: (1) the dp4a and FP8 products prefetch the next D strides of each warp's
# weights into L2 before pdl_wait (RIGSCOPE_CUDA_L2PF=D, kernels/quant_mv.cu mq_body, fp8_mv.cu
# mf8_body; 0, the default, none; the lanes share out the rows' lines); (2) the wide
# one-token products quantize their own 32-row group from shared memory instead of reading it
# back from L2 (quant.cu mq_quant_own). Images: b (both, embedded in the binary), a (the window
# alone: RIGSCOPE_CUDA_PTX=a.cubin), old (main 2e128ad's sm_90 cubin).
# (a) -checks quant,fp8 -parts kernels with b (the fused rows: scratch = qx of the output,
# bitwise); (b) `generate` md5 on Q4_K_M and Q8_0: b, b with L2PF=2, a, old (must be equal);
# (c) cuda-bench Q4_K_M, Q8_0 and FP8, alternating, two rounds.
# Built on session 38's machine: images with nvcc 11.8 (sm_90 ptx, then ptxas), b's gzipped into
# kernels/ for `go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o /tmp/rigscope-cuda .`
# and `go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda`; xz'd into
# carry/m1 with a.cubin and old.cubin. Carry ["carry/m1"] after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init m1; unpack carry/m1 cc.test rigscope-cuda a.cubin old.cubin; C=/tmp/cc.test; B=/tmp/rigscope-cuda
chmod -x /tmp/a.cubin /tmp/old.cubin; OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin; A=RIGSCOPE_CUDA_PTX=/tmp/a.cubin
q4km_start $B; F8=/tmp/q/llama-8b.q8_0.gguf
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out $F8 > /dev/null 2>&1; touch /tmp/q/done8 ) &
el checks; timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -checks quant,fp8 -parts kernels > $O/x/checks.txt 2>&1; echo "checks rc $?"
grep -E "FAIL|rror" $O/x/checks.txt | head -20; grep -cE " ok" $O/x/checks.txt; snap
q4km_wait; el generate; gen b X=1; gen b-pf2 RIGSCOPE_CUDA_L2PF=2; gen a "$A"; gen old "$OLD"
while [ ! -f /tmp/q/done8 ]; do sleep 2; done
F4=$F; F=$F8; gen q8-b X=1; gen q8-b-pf2 RIGSCOPE_CUDA_L2PF=2; gen q8-old "$OLD"; F=$F4; snap
CB_KINDS="gate_up|down|qkv|wo"
for r in 1 2; do el "bench round $r"
  cb old "$OLD" "--model $F" $r; cb a "$A" "--model $F" $r; cb b X=1 "--model $F" $r
  cb b-pf1 RIGSCOPE_CUDA_L2PF=1 "--model $F" $r; cb b-pf2 RIGSCOPE_CUDA_L2PF=2 "--model $F" $r; cb b-pf4 RIGSCOPE_CUDA_L2PF=4 "--model $F" $r
  cb q8-old "$OLD" "--model $F8" $r; cb q8-b X=1 "--model $F8" $r; cb q8-b-pf1 RIGSCOPE_CUDA_L2PF=1 "--model $F8" $r; cb q8-b-pf2 RIGSCOPE_CUDA_L2PF=2 "--model $F8" $r
  cb f8-old "$OLD" "--dtype f8_e4m3 --shapes llama-8b" $r; cb f8-b X=1 "--dtype f8_e4m3 --shapes llama-8b" $r
  cb f8-b-pf1 RIGSCOPE_CUDA_L2PF=1 "--dtype f8_e4m3 --shapes llama-8b" $r; cb f8-b-pf2 RIGSCOPE_CUDA_L2PF=2 "--dtype f8_e4m3 --shapes llama-8b" $r
  snap; done
el done; snap
