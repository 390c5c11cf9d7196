#!/bin/bash
# Session 31, call p4: main's images. (a) `-checks kernels` with the bf16 cache's RMS bound for few
# values (p2's only failure: hd 16, one token, 32 values). (b) The eagle check twice, with the graph
# timings gaining a memset of 96 MB before each replay (timed alone too): what the verify and the
# chain cost when L2 no longer holds their weights (the cycle alternates two models).
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda, xz into
# carry/p4; m.tar.xz as p2's. Carry ["carry/p4"].
. bench/cuda/call.sh; call_init p4; unpack carry/p4 cc.test; C=/tmp/cc.test
mkdir -p /tmp/m && tar xJf carry/p4/m.tar.xz -C /tmp/m
el "checks kernels"
timeout 200 $C -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels -models /nonexistent > $O/x/checks.txt 2>&1; echo "exit $?"
echo "ok lines $(grep -c ' ok' $O/x/checks.txt)"; grep -E -i "fail|panic|mismatch" $O/x/checks.txt | head -20
grep -E "hd=16 base=0 T=1" $O/x/checks.txt | head
for r in 1 2; do el "eagle $r"; timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$r.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|step parts|spec step|alternately|FAIL" $O/x/eagle-$r.txt; done
el done; snap
