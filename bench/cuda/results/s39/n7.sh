#!/bin/bash
# Session 39, call n7 (written, not run: the device budget was spent): the bandwidth table's
# -bwtall=4 rows for Q8_0 and Q4_0 (n4 had Q4_K and Q6_K), main's image: each product's steady
# rate and fixed cost, for the Q8_0 target of issue 23.
# carry/n7: cc.test.xz (n5's: this session's checks). Carry ["carry/n7"] after
# `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init n7; unpack carry/n7 cc.test; C=/tmp/cc.test
bw q8q4 X=1 -bwtypes=Q8_0,Q4_0 -bwtall=4; el done; snap
