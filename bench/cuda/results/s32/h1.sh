#!/bin/bash
# Session 32, call h1: session 31's p1 (the device suite with both peers, owed on an H200) only
# when the machine is an H200; on any other card it stops at once. Carry
# ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"] (as s31/p1.sh says).
n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "$n"
case "$n" in *H200*) exec bash bench/cuda/results/s31/p1.sh ;; esac
echo "not an H200: the suite did not run"
