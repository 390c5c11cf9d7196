#!/bin/bash
# Session 42 (for the next session): n2.sh first on any card; on an H200 the next call on the
# warm machine (marker /tmp/s42-n2) runs the owed suite, TYPES q4_k_m q8_0.
# After `KEEP=s42 sh bench/cuda/aside.sh out`: carry ["carry/t5", "carry/rigscope-cuda.gz"] for the
# first call, ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] for the second (all three together
# come near the 64 MiB limit).
. bench/cuda/call.sh; then_suite /tmp/s42-n2 bench/cuda/results/s42/n2.sh
