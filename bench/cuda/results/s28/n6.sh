#!/bin/bash
# Session 28, call n6: ncu of the mqk products at HEAD (n3's kernels) on llama-8b's down shape
# (4096 x 14336), from -checks quant -parts mqk's timing part (launch indices counted from the check's
# order: the kernel filter counts only its own launches): mqk_q6k_8_w8_u1 at T=1 (Q6_K: 1.5-1.7x dp4a),
# mqk_q4k_8_w8_u1 at T=1 and T=5. ncu ends the run after each (--kill). carry/n6: cc.test.xz.
. bench/cuda/call.sh; call_init n6
unpack carry/n6 cc.test
M=$(for r in long_scoreboard short_scoreboard math_pipe_throttle wait no_instruction lg_throttle mio_throttle barrier not_selected selected dispatch_stall; do printf "smsp__average_warps_issue_stalled_%s_per_issue_active.ratio," $r; done)
S="--metrics ${M%,} --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
prof() { local k=$1 skip=$2 tag=$3
  el "ncu $k skip $skip ($tag)"
  timeout 150 ncu --clock-control none $S -k regex:"^$k\$" -s $skip -c 1 --kill yes /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk -models /nonexistent > $O/x/ncu-$tag.txt 2>&1; echo "rc $?"
  grep -E "Duration|Memory Throughput|DRAM Throughput|Compute \(SM\) Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Waves Per SM|Warp Cycles Per Issued|Issued Ipc|Executed Ipc A|smsp__average|Grid Size|Block Size|Executed Instructions  " $O/x/ncu-$tag.txt | head -40
}
prof mqk_q6k_8_w8_u1 478 q6k-down-1
prof mqk_q4k_8_w8_u1 614 q4k-down-1
prof mqk_q4k_8_w8_u1 656 q4k-down-5
el done
snap; rm -rf $O/x
