#!/bin/bash
# Session 34's first device call: a1 (ATTOWN) then a2 (evict-first weights), one machine.
# Carry ["carry/a4", "carry/p5/m.tar.xz", "carry/ef"] with kernels/*.gz and the older
# bench/cuda/results folders moved out of the tree (the carry is 64 MiB at most).
bash bench/cuda/results/s34/a1.sh
bash bench/cuda/results/s34/a2.sh
