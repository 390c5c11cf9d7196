#!/bin/bash
# Session 29, call p5 (on p4's warm H100, p4's carry; the command as run): the eagle check again,
# cuda only, without p4's background write-gguf competing for the host, two rounds.
. bench/cuda/call.sh; call_init p5; unpack carry/p4 cc.test; mkdir -p /tmp/m && tar xJf carry/p4/m.tar.xz -C /tmp/m; for r in 1 2; do timeout 150 /tmp/cc.test -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$r.txt 2>&1; echo "round $r rc $?"; grep -E "^cuda |per prompt|graphs, device" $O/x/eagle-$r.txt; done; snap
