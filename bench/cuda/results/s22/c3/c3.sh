#!/bin/bash
# Session 22, call C3 (not run in session 22: no device lent): Q4_K, Q6_K and Q8_0 on fp16 tensor
# cores (mh_x, mhq_q4k_*, mhq_q6k_*, mhq_q80_*: weights dequantized to fp16 in registers, mma.sync
# m16n8k16 summing in float32; w4/w8/w16 warps a block, e: high nibbles as 16q against x/16):
# -checks quant -parts mma (int8 mqm* as in C1, then mh against float64, T=k rows bitwise T=1,
# and times beside dp4a). carry/c3: cc.test.xz (go test -c -tags 'cuda cubinonly') and
# k90.cubin.gz (kernels/kernels_sm90.cubin.gz of this stop, or a rebuilt variant).
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/c3.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/c3/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
gunzip -c carry/c3/k90.cubin.gz > /tmp/k90.cubin
el "quant mma + mh"; RIGSCOPE_CUDA_PTX=/tmp/k90.cubin timeout 240 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts mma > $O/mma.txt 2>&1; echo "exit $?"
grep -A60 "fp16 tensor cores" $O/mma.txt | grep -E "FAIL|panic|^q(4k|6k|80)_w|^(qkv|wo|gate|down)|matrix|error" | head -80
el done
