#!/bin/bash
# Session 41 (got no machine; for the next session): t4.sh first on any card; on an H200 the
# next call on the warm machine (marker /tmp/s41-t4) runs the owed suite, TYPES q4_k_m q8_0.
# Carry ["carry/t4", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] after
# `KEEP=s41 sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; then_suite /tmp/s41-t4 bench/cuda/results/s41/t4.sh
