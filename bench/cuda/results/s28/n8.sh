#!/bin/bash
# Session 28, call n8 (on n7's warm H200, n7's carry): cuda-bench on the synthetic llama-8b as Q8_0
# and Q4_0, the default path (the _r64 kernels in n7's image are not launched by it).
. bench/cuda/call.sh; call_init n8; unpack carry/n7 rigscope-cuda; B=/tmp/rigscope-cuda; mkdir -p /tmp/q; el write
( $B write-gguf --model synthetic:llama-8b --type q8_0 --out /tmp/q/q8.gguf > /dev/null 2>&1 ) & p1=$!
( $B write-gguf --model synthetic:llama-8b --type q4_0 --out /tmp/q/q40.gguf > /dev/null 2>&1 ) & p2=$!
wait $p1 $p2; el bench
for f in q8 q40; do timeout 40 $B cuda-bench --model /tmp/q/$f.gguf --steps 50 > $O/x/cb-$f.txt 2>&1; echo "$f: $(row $O/x/cb-$f.txt)"; grep -E "^(gate_up|qkv|down|wo|attention|output) " $O/x/cb-$f.txt; done
el done; snap; rm -rf $O/x
