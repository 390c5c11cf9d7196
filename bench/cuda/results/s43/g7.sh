#!/bin/bash
# For session 44: n4.sh (vl against main, about 4 minutes) first on any card; on an H200 the next
# call on the warm machine (marker /tmp/s43-n4) runs the owed suite, TYPES q4_k_m q8_0.
# After `KEEP="s42 s43" sh bench/cuda/aside.sh out`, one carry serves both calls (about 38 MB):
# ["carry/t6", "carry/rigscope-cuda.gz", "carry/llamacpp-cuda"].
. bench/cuda/call.sh; then_suite /tmp/s43-n4 bench/cuda/results/s43/n4.sh
