#!/bin/bash
# headstep call 1: base vs v1 cubin, knob variants of the 8B-shaped head (headknobs), head8b tables.
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/run1.txt) 2>&1
t0=$(date +%s)
C=carry/headstep
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
for f in base v1; do xz -dc $C/$f.cubin.xz > /tmp/$f.cubin; done
(cd /tmp && xz -dc "$OLDPWD/$C/m.tar.xz" | tar xf -); M=/tmp
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
hk() { local cub=$1; shift; RIGSCOPE_CUDA_PTX=/tmp/$cub.cubin /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks headknobs -headknobs "$1" 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS"; }
BV="base;b_skipein SKIP=eagle_in;b_skipam SKIP=argmax"
V="v1;v1_outam0 OUTAM=0;v1_ein0 EAGLEIN=0;skip_ein SKIP=eagle_in;skip_am OUTAM=0&SKIP=argmax;skip_fc SKIP=fc;skip_wo SKIP=wo;skip_qkv SKIP=qkv;skip_down SKIP=down;skip_att SKIP=attention;nop_wo NOP=wo;pdl0 PDL=0;fc16 TCW=fc:16;fc8 TCW=fc:8;wo16 TCW=wo:16;wo8 TCW=wo:8;qkv32 TCW=qkv:32;qkv8 TCW=qkv:8;down16 TCW=down:16;out32 TCW=output:32;out8 TCW=output:8;rt_ctl RT=gate_up:2;rt_none RT=none;rt_fc RT=gate_up:2,fc:2;rt_wo RT=gate_up:2,wo:2;rt_qkv RT=gate_up:2,qkv:2;rt_down RT=gate_up:2,down:2;pf_wo8 TCPF=wo:8;pf_wo4 TCPF=wo:4;pf_qkv8 TCPF=qkv:8;pf_qkv16 TCPF=qkv:16;pf_qkv32 TCPF=qkv:32;pf_both TCPF=wo:8,qkv:8;pf_all TCPF=wo:8,qkv:16,down:4"
echo "### base cubin"; hk base "$BV"
echo "### v1 cubin"; hk v1 "$V"
echo "### base cubin again"; hk base "base"
echo "### v1 cubin again"; hk v1 "v1;v1_outam0 OUTAM=0;pf_both TCPF=wo:8,qkv:8"
h8() { echo "### head8b $*"; env "$@" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks head8b 2>&1 | grep -v "^=== RUN"; }
h8 RIGSCOPE_CUDA_PTX=/tmp/v1.cubin
h8 RIGSCOPE_CUDA_PTX=/tmp/base.cubin
h8 RIGSCOPE_CUDA_PTX=/tmp/v1.cubin RIGSCOPE_CUDA_TCPF=wo:8,qkv:8
ck() { n=$1; shift; echo "### check $n $* (at $(( $(date +%s) - t0 )) s)"; env "$@" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v $CK 2>&1 | grep -v "^=== RUN" > $O/$n.txt; echo "exit $?"; grep -E "accepts|cuda  |tree k|sampled chain k|FAIL|fail|differ" $O/$n.txt | head -20; }
CK="-checks eagletree,eagle -eagle8b=false -eagledevs cuda -models $M" ck eagle RIGSCOPE_CUDA_PTX=/tmp/v1.cubin
CK="-checks eagletree,eagle -eagle8b=false -eagledevs cuda -models $M" ck eagle_pf RIGSCOPE_CUDA_PTX=/tmp/v1.cubin RIGSCOPE_CUDA_TCPF=wo:8,qkv:8
CK="-checks kernels" ck kernels RIGSCOPE_CUDA_PTX=/tmp/v1.cubin
tail -5 $O/kernels.txt
echo "total $(( $(date +%s) - t0 )) s"
