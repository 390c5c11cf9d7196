#!/bin/sh
# One device call: decode benchmark vs the bandwidth bound and the PyTorch
# graph peer, kernel + fixture checks, GPU allreduce, NVML telemetry.
# Build here:  go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
#              go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
# Run there:   sh bench/cuda/run.sh   (device run with carry: ["carry/m2", "carry/rigscope-cuda.gz", "carry/cuda-check.test.gz"]; README.md says how to make carry/m2)
set -u
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
gunzip -c carry/cuda-check.test.gz > /tmp/cuda-check.test && chmod +x /tmp/cuda-check.test; C="/tmp/cuda-check.test -test.run TestCUDACheck -test.timeout 0"
O=${OUT:-/tmp/out}; mkdir -p "$O"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/smi.txt" 2>&1
timeout ${T_BENCH:-150} $B cuda-bench ${BENCH_ARGS:-} > "$O/bench.txt" 2>&1
timeout ${T_TORCH:-120} python3 bench/cuda/torch_peer.py > "$O/torch.txt" 2>&1
timeout ${T_CHECK:-120} $C -models ${MODELS:-carry/m2} > "$O/check.txt" 2>&1
timeout ${T_AR:-120} $B cuda-allreduce ${AR_ARGS:-} > "$O/allreduce.txt" 2>&1
timeout 30 $B gpus > "$O/gpus.txt" 2>&1
cat "$O/bench.txt" "$O/torch.txt"; tail -20 "$O/check.txt"; tail -30 "$O/allreduce.txt"; cat "$O/gpus.txt"
