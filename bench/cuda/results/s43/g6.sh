#!/bin/bash
# Session 43: n3.sh (session 42's n2 with pp) first on any card; on an H200 the next call on the
# warm machine (marker /tmp/s43-n3) runs the owed suite, TYPES q4_k_m q8_0.
# After `KEEP="s42 s43" sh bench/cuda/aside.sh out`: carry ["carry/t5", "carry/rigscope-cuda.gz"]
# for the first call, ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] for the second.
. bench/cuda/call.sh; then_suite /tmp/s43-n3 bench/cuda/results/s43/n3.sh
