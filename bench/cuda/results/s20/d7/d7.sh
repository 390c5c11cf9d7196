#!/bin/bash
# Session 20, call D7: the EAGLE-3 cycle's features written to mapped host memory by gather_feats
# (no side-stream copy, no cross-stream wait before the next verify): old (main) against new,
# alternating, eagle check (engine path) and eaglehost; then models, eagletree, sample, kv with new.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/d7.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
for b in cc-old cc-new; do xz -dc carry/d7/$b.xz > /tmp/$b && chmod +x /tmp/$b; done
(cd /tmp && xz -dc "$OLDPWD/carry/d7/m.tar.xz" | tar xf -); M=/tmp
cc() { local b=$1; shift; timeout ${TO:-150} /tmp/$b -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
bad() { grep -hE "panic|cuda-check:|FAIL|rror" "$@" | head -8; }
el eagle
for r in 1 2; do for b in cc-old cc-new; do
  cc $b -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/eagle-$b-$r.txt 2>&1
  echo "$b round $r exit $?: $(grep -hE '^cuda  ' $O/eagle-$b-$r.txt)"; grep -hE "^  draft |^  decode time" $O/eagle-$b-$r.txt
done; done
el eaglehost
for b in cc-old cc-new; do cc $b -checks eaglehost -models $M > $O/eaglehost-$b.txt 2>&1; echo "$b exit $?"; grep -E "tok/s" $O/eaglehost-$b.txt | head -4; done
el rest; cc cc-new -checks models,eagletree,sample,kv -models $M > $O/rest.txt 2>&1; echo "exit $?"; bad $O/rest.txt; grep -E "^--- |12/12|differ|trees" $O/rest.txt | head -12
el done
