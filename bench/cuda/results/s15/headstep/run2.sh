#!/bin/bash
# headstep call 2 (final code): base vs v2 cubin (headknobs A/B), head8b on v2, the eagle checks on v2.
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/run2.txt) 2>&1
t0=$(date +%s)
C=carry/headstep
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
for f in base v2; do xz -dc $C/$f.cubin.xz > /tmp/$f.cubin; done
(cd /tmp && xz -dc "$OLDPWD/$C/m.tar.xz" | tar xf -); M=/tmp
hk() { local cub=$1; shift; echo "### headknobs $cub (at $(( $(date +%s) - t0 )) s)"; RIGSCOPE_CUDA_PTX=/tmp/$cub.cubin timeout 60 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks headknobs -headknobs "$1" 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS"; }
hk base "base;b_copy1 HEADCOPY=1;b_skipein SKIP=eagle_in"
hk v2 "v2;v2_copy1 HEADCOPY=1;v2_skipein SKIP=eagle_in"
echo "### head8b v2 (at $(( $(date +%s) - t0 )) s)"; RIGSCOPE_CUDA_PTX=/tmp/v2.cubin timeout 60 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks head8b 2>&1 | grep -v "^=== RUN"
echo "### eagle v2 (at $(( $(date +%s) - t0 )) s)"; RIGSCOPE_CUDA_PTX=/tmp/v2.cubin timeout 60 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks eagletree,eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle.txt 2>&1; echo "exit $?"
grep -E "accepts|cuda  |tree k|sampled chain k|FAIL|PASS" $O/eagle.txt | head -20
echo "total $(( $(date +%s) - t0 )) s"
