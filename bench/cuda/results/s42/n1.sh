#!/bin/bash
# Session 42, call n1: where the decode attention's time goes, instruction by instruction. ncu's
# PC sampling (SourceCounters, WarpStateStats, sampling every 32 cycles) of one graphed
# attn_128_1_kb_t1 launch of cuda-bench's llama-8b bf16 decode at ctx 512 (main's default path,
# carry ["carry/rigscope-cuda.gz"]); the source page per SASS instruction as CSV, and the raw
# stall counters. ncu runs the kernel alone (no PDL overlap).
. bench/cuda/call.sh; call_init n1
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
el ncu
timeout 300 ncu --cache-control none --clock-control none -k 'regex:^attn_128_1_kb_t1$' --launch-skip 64 -c 2 \
  --warp-sampling-interval 0 --section WarpStateStats --section SourceCounters --section LaunchStats \
  --import-source no -o $O/x/attn $B cuda-bench --shapes llama-8b --steps 3 > $O/x/ncu-run.txt 2>&1; echo "rc $?"
tail -4 $O/x/ncu-run.txt
ncu -i $O/x/attn.ncu-rep --page source --csv --print-source sass > $O/x/sass.csv 2> $O/x/sass.err; echo "source rc $?"
wc -l $O/x/sass.csv; head -3 $O/x/sass.csv | cut -c1-600
ncu -i $O/x/attn.ncu-rep --page raw --csv > $O/x/raw.csv 2>&1; echo "raw rc $?"
ncu -i $O/x/attn.ncu-rep --page details > $O/x/details.txt 2>&1
grep -iE "Duration|Warp Cycles Per|stall|No Instruction" $O/x/details.txt | head -30
gzip $O/x/sass.csv $O/x/raw.csv; rm -f $O/x/attn.ncu-rep.tmp
el done; snap
