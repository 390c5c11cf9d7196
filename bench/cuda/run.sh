#!/bin/sh
# One device call: kernel + fixture checks, decode benchmark vs the bandwidth
# bound and the PyTorch graph peer, GPU allreduce, and NVML telemetry.
# Build here first:  make cuda-carry  (see README: go build -tags 'headless cuda' -o carry/rigscope-cuda .)
# Run there:         sh bench/cuda/run.sh   (carry: carry)
set -u
B=./carry/rigscope-cuda
O=${OUT:-/tmp/out}; mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/smi.txt" 2>&1
$B cuda-check --models carry/models 2>&1 | tee "$O/check.txt"
$B cuda-bench ${BENCH_ARGS:-} 2>&1 | tee "$O/bench.txt"
python3 bench/cuda/torch_peer.py 2>&1 | tee "$O/torch.txt"
$B cuda-allreduce ${AR_ARGS:-} 2>&1 | tee "$O/allreduce.txt"
$B gpus 2>&1 | tee "$O/gpus.txt"
echo "=== summary"; grep -A3 "^# decode" "$O/bench.txt"; cat "$O/torch.txt" | grep torch-peer; grep -E "model|gocoder" "$O/check.txt"
