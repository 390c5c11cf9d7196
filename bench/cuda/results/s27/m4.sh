#!/bin/bash
# Session 27, call m4 (about 2 device minutes past the start): what bounds the dp4a GLU at T = 5
# now (mqg_q4k_5, 2 rows a group) against T = 1 (mqg_q4k_1w8): ncu sections of their first
# launches in `-checks quant -parts bandwidth` (random Q4_K blocks, llama-8b's gate/up, x quantized
# by the kernel before, as in a step), ncu ending the run after them (--kill). carry/m4: cc.test.xz.
. bench/cuda/call.sh; call_init m4
unpack carry/m4 cc.test
M=$(for r in long_scoreboard short_scoreboard math_pipe_throttle wait no_instruction lg_throttle mio_throttle barrier not_selected selected dispatch_stall; do printf "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio," $r; done)
S="--metrics ${M%,} --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
for k in mqg_q4k_1w8 mqg_q4k_5 mqn2_q4k_q6k_5; do
  el "ncu $k"
  timeout 60 ncu --clock-control none $S -k regex:"^$k\$" -s 2 -c 1 --kill yes /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -models /nonexistent > $O/x/ncu-$k.txt 2>&1; echo "rc $?"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Waves Per SM|Warp Cycles Per Issued|Issued Ipc|Executed Ipc A|smsp__average|Grid Size|Block Size" $O/x/ncu-$k.txt | head -40
done
el done
snap; rm -rf $O/x
