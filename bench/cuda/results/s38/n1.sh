#!/bin/bash
# Session 38, call n1: ncu of the Q4_K_M decode step's kernels on main (carry
# ["carry/rigscope-cuda.gz"]): each product kind and the attention, one launch each past cuda-bench's
# setup, caches and clocks left alone (--cache-control none --clock-control none), sections
# SpeedOfLight, MemoryWorkloadAnalysis, Occupancy, LaunchStats, WarpStateStats: how far each
# kernel is from DRAM's peak when it runs alone, and what its warps wait on.
. bench/cuda/call.sh; call_init n1
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
q4km_start $B; q4km_wait; el ncu
K='regex:^(mqg_q4k_1w8|mq_q4k_1r2bw32|mqn2_q4k_q6k_1|mq_q6k_1|mqn_q6k_1r2b|mqn_q4k_1|attn_128_1_kb_t1|mqn_q6k_1)$'
timeout 200 ncu --cache-control none --clock-control none -k "$K" --launch-skip 200 -c 14 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats \
  $B cuda-bench --model $F --steps 3 > $O/x/ncu.txt 2>&1; echo "ncu rc $?"
grep -E "^  [a-z_0-9]+\(|^  [a-z_0-9]+ \(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Waves Per SM|Registers Per|Warp Cycles Per Issued|Block Limit Registers|Compute \(SM\) Throughput" $O/x/ncu.txt | head -200
grep -iE "stall|long scoreboard|barrier" $O/x/ncu.txt | head -30
el done; snap
