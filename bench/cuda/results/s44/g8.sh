#!/bin/bash
# For session 44: n5.sh (main with vl, about 3 minutes) first on any card; on an H200 the next
# call on the warm machine (marker /tmp/s44-n5) runs the owed suite, TYPES q4_k_m q8_0.
# After `sh bench/cuda/aside.sh out`, one carry serves both calls (about 30 MB):
# ["carry/t7", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"].
. bench/cuda/call.sh; then_suite /tmp/s44-n5 bench/cuda/results/s44/n5.sh
