#!/bin/sh
# One device call: Nsight Compute on the first decode-step kernels of one
# shape (isolated: ncu serializes and replays each kernel), for duration,
# DRAM throughput, occupancy and warp stall reasons. Carry ["carry/rigscope-cuda.gz"].
# KERNELS is an ncu kernel-name regex; COUNT how many launches to profile.
set -u
gunzip -c ${BINGZ:-carry/rigscope-cuda.gz} > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
O=${OUT:-/tmp/out}; mkdir -p "$O"
timeout ${T_NCU:-300} ncu --clock-control none --graph-profiling node \
  -k "regex:${KERNELS:-^(attn_128_1|tcn16_1|tc16_1|tcglu16_1)$}" --launch-count ${COUNT:-10} \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  $B cuda-bench --shapes ${SHAPE:-llama-8b} --steps 2 > "$O/ncu${TAG:-}.txt" 2>&1
echo "ncu rc $?"
grep -E '^  [a-z_0-9]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Waves Per SM|Block Limit Registers|Stall Long|L2 Hit' "$O/ncu${TAG:-}.txt" | head -${LINES_NCU:-150}
