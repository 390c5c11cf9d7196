#!/bin/sh
# GPU allreduce on one machine kind, one device call (issues 7 and 8):
# topology (nvidia-smi topo -m next to rigscope's NVML matrix), the P2P
# self-test per GPU pair, allreduce-bench --device cuda (oneshot, twoshot,
# host, nccl, auto; 1K to 64M per rank; nccl-tests columns; auto's picks and
# crossovers; auto vs nccl), and the float64 check from 1 float up
# (cuda-allreduce). Ranks get one GPU each when the machine has that many,
# else they share GPU 0 (the table header says which).
#
# Build here (kernels/*.ptx must hold p2p_probe: `go generate ./kernels` after
# editing kernels/allreduce.cu):
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there (device run, kind nvidia-h200 / -x2 / -x4 / -x8, carry ["carry/rigscope-cuda.gz"]):
#   sh bench/cuda/allreduce.sh
# Knobs: RANKS (default 1 plus every one of 2,4,8 the GPUs allow, or 1,2,4,8
# on one GPU), SIZES (1K:64M), ITERS (20), T_BENCH/T_CHECK (seconds), BIN_GZ.
set -u
if [ -n "${RIGSCOPE:-}" ]; then B=$RIGSCOPE; else
	gunzip -c "${BIN_GZ:-carry/rigscope-cuda.gz}" > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
fi
O=${OUT:-/tmp/out}; mkdir -p "$O"
# NVLink multicast stays off (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
NG=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ -z "${RANKS:-}" ]; then
	if [ "$NG" -le 1 ]; then RANKS=1,2,4,8; else
		RANKS=1; for r in 2 4 8; do [ "$r" -le "$NG" ] && RANKS=$RANKS,$r; done
	fi
fi
echo "# $NG GPU(s); ranks $RANKS" | tee "$O/summary.txt"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/smi.txt" 2>&1
nvidia-smi topo -m > "$O/topo-smi.txt" 2>&1
timeout 30 $B gpus > "$O/gpus.txt" 2>&1
timeout ${T_BENCH:-300} $B allreduce-bench --device cuda --backend all --ranks "$RANKS" --sizes "${SIZES:-1K:64M}" \
	--iters "${ITERS:-20}" --latency > "$O/bench.txt" 2> "$O/bench.err"
echo "allreduce-bench exit $?" >> "$O/summary.txt"
timeout ${T_CHECK:-240} $B cuda-allreduce --ranks "$(echo "$RANKS" | sed 's/^1,//')" --iters 3 > "$O/check.txt" 2> "$O/check.err"
echo "cuda-allreduce exit $?" >> "$O/summary.txt"
echo "== nvidia-smi topo -m"; cat "$O/topo-smi.txt"
echo "== rigscope gpus (NVML)"; cat "$O/gpus.txt"
echo "== allreduce-bench (latency histograms left out here; they are in bench.txt)"
awk '/^# latency histograms,.*size/ {skip=1; next} /^#/ {skip=0} !skip' "$O/bench.txt"; cat "$O/bench.err"
echo "== cuda-allreduce (float64 check, 1 float up)"; grep -c float "$O/check.txt"; grep '^#' "$O/check.txt"; tail -3 "$O/check.txt"; cat "$O/check.err"
cat "$O/summary.txt"
