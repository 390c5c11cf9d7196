#!/bin/bash
# Session 20, call D4: the attention chunk for the EAGLE-3 cycle (RIGSCOPE_CUDA_ATTCHUNK 32/64/128,
# alternating), and the FP8 mf8/mf8s shared tail (mf8_finish): -checks fp8, then FP8 llama-8b
# cuda-bench old (main before) against new, alternating.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d4.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
for b in cc.test; do xz -dc carry/d4/$b.xz > /tmp/$b && chmod +x /tmp/$b; done; gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-new && chmod +x /tmp/rigscope-new
(cd /tmp && xz -dc "$OLDPWD/carry/d4/m.tar.xz" | tar xf -); M=/tmp
cc() { timeout ${TO:-150} /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL|rror" "$@" | head -8; }
cb() { local n=$1 b=$2; shift 2; timeout 100 /tmp/$b cuda-bench --shapes llama-8b --tp 1 "$@" > $O/$n.txt 2>&1; echo "$n exit $?: $(grep -E '^ *llama-8b' $O/$n.txt | head -1)"; }
el attchunk
for r in 1 2; do for c in 32 64 128; do
  RIGSCOPE_CUDA_ATTCHUNK=$c cc -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-c$c-$r.txt 2>&1
  echo "chunk $c round $r exit $?: $(grep -hE '^cuda  ' $O/eagle-c$c-$r.txt)"; grep -hE "^target decode|^graphs" $O/eagle-c$c-$r.txt
done; done
el fp8; cc -checks fp8 -models $M > $O/fp8.txt 2>&1; echo "exit $?"; bad $O/fp8.txt
grep -E "^--- " $O/fp8.txt; echo "ok rows: $(grep -cE ' ok$| ok \(' $O/fp8.txt)"; grep -E "^(32 FP8|gocoder|fp8 )" $O/fp8.txt | head -20
el done
