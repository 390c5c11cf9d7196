#!/bin/bash
# For session 45: n6.sh (rf.patch's image against main, about 4 minutes) first on any card; on an
# H200 the next call on the warm machine (marker /tmp/s44-n6) runs the owed suite, TYPES q4_k_m q8_0.
# After `sh bench/cuda/aside.sh out`, one carry serves both calls (about 34 MB):
# ["carry/t8", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"].
. bench/cuda/call.sh; then_suite /tmp/s44-n6 bench/cuda/results/s44/n6.sh
