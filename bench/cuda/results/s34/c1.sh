#!/bin/bash
# Session 34's first device call: a1 (ATTOWN) then a2 (evict-first weights), one machine.
# Carry ["carry/a4", "carry/p5/m.tar.xz", "carry/ef"] after `sh bench/cuda/aside.sh out` (the tree
# and the carry together are 64 MiB at most; `sh bench/cuda/aside.sh in` afterwards).
bash bench/cuda/results/s34/a1.sh
bash bench/cuda/results/s34/a2.sh
