#!/bin/bash
# Session 40, call v3: v2 again with the image to land. In v2 the Q6_K half of the mixed stack
# (mqn2_q4k_q6k_5) took the Q4_K half to 128 registers, and Q4_K_M's qkv lost at T=5; here mq_body's
# XP is off in mqn2. kernels/quant.cu XPRE: Q8_0 and Q6_K load every token's activation before the
# arithmetic at 2 to 5 tokens; Q4_K, Q5_K, Q4_0 and the mixed stacks as before. new.cubin is the
# regenerated sm_90 image of the tree to land; main's is the one embedded in the binaries. (a)
# -checks quant -parts kernels with new (bits: every T bitwise its T=1 run, and float64 bounds); (b)
# the bandwidth table, main and new; (c) cuda-bench on Q8_0 and Q4_K_M (verify k=4 / decode), main
# and new alternating, two rounds.
# carry/v3: cc.test.xz (v1's) and new.cubin.xz; carry/rigscope-cuda.gz (main's default binary).
# Carry ["carry/v3", "carry/rigscope-cuda.gz"] after `KEEP=s40 sh bench/cuda/aside.sh out`.
CALL=v3 bash bench/cuda/results/s40/v2.sh
