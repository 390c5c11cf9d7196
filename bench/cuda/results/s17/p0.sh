#!/bin/bash
# Session 17, call P0: phase cost (PDL kernels vs grid barrier), eagle host profile, 8B head fc warps, ncu of the gocoder chain.
O=${OUT:-/tmp/out}; mkdir -p $O; exec > >(tee $O/p0.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
xz -dc carry/p0/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
(cd /tmp && xz -dc "$OLDPWD/carry/mx/m.tar.xz" | tar xf -); M=/tmp/m
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
el phase; chmod +x carry/p0/phase; timeout 60 carry/p0/phase
cc() { timeout ${TO:-60} /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "$@"; }
el "eagle profile"
cc -checks eagle -eagle8b=false -eagledevs cuda -models $M -test.cpuprofile $O/cpu.prof > $O/eagle.txt 2>&1; echo "exit $?"
grep -hE "cuda  |sum |target decode|graphs,|head chain|spec step" $O/eagle.txt
el "headknobs"
cc -checks headknobs -headknobs "base;fc16 TCW=fc:16;fc8 TCW=fc:8;base2" 2>&1 | grep -v "^=== RUN\|^PASS\|^--- PASS"
el "ncu eagle"
timeout 150 ncu --clock-control none --graph-profiling node --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size -c 2500 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -checks eagle -eagle8b=false -eagledevs cuda -models $M > $O/ncu.csv 2> $O/ncu.err; echo "rc $?"
tail -2 $O/ncu.err; wc -l $O/ncu.csv; xz -9 $O/ncu.csv
cp /tmp/cc $O/cc.bin 2>/dev/null; rm -f $O/cc.bin
el done
