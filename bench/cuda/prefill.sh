#!/bin/sh
# Prefill of 512 tokens on the GPU (issue 19), rigscope against llama.cpp
# CUDA on the same GGUF file, alternately, ROUNDS rounds: llama-bench pp512
# (-p 512 -n 0, FA on, all layers on the GPU) and `rigscope generate
# --device cuda` with a 512-token prompt and one new token (its prefill_ms),
# once per prefill mode in MODES (default "split bf16 cublas"; off: 16
# tokens a forward; bf16fa: bf16 with tensor-core attention, experimental;
# cublas: the products through cuBLAS, loaded at run time (the default;
# split when libcublas is missing); cublasfa: cublas
# with bf16fa's attention). Each mode's stats.prefill_path (which path ran:
# cuBLAS and its version, or why not) goes to $OUT/prefill.txt in round 1.
# Run after bench/cuda/quant.sh on the same machine (it builds llama-bench
# and writes the files): sh bench/cuda/prefill.sh [FILE]; the lines also go
# to $OUT/prefill.txt (they come back even if the call runs out of time).
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
F=${1:-/tmp/q/llama-8b.bf16.gguf}
LB=${LB:-/tmp/llamacpp-cuda/llama-bench}
B=${B:-/tmp/rigscope-cuda}
IDS=$(seq -s, 1000 1511)
for r in $(seq 1 ${ROUNDS:-2}); do
	a=$(timeout 300 "$LB" -m "$F" -ngl 99 -p 512 -n 0 -r 3 -fa 1 -o jsonl 2> "$O/pp-llama-$r.err" |
		python3 -c 'import json,sys; print(round([json.loads(l) for l in sys.stdin if l.strip()][-1]["avg_ts"],1))' 2>/dev/null || echo -)
	b=""
	for m in ${MODES:-split bf16 cublas}; do # RIGSCOPE_CUDA_PREFILL
		RIGSCOPE_CUDA_PREFILL=$m timeout 300 $B generate --device cuda --model "$F" --ctx 1024 --prompt-ids "$IDS" --max-tokens 1 --json > "$O/pp-rig-$m-$r.json" 2> "$O/pp-rig-$m-$r.err"
		v=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["stats"]; print(round(512/(s["prefill_ms"]/1000),1))' "$O/pp-rig-$m-$r.json" 2>/dev/null || echo -)
		[ "$r" = 1 ] && python3 -c 'import json,sys; print("prefill path", sys.argv[2] + ":", json.load(open(sys.argv[1]))["stats"].get("prefill_path", "?"))' "$O/pp-rig-$m-$r.json" "$m" 2>/dev/null | tee -a "$O/prefill.txt"
		b="$b, rigscope $m $v tok/s"
	done
	echo "prefill 512 round $r ($(basename "$F")): llama.cpp $a tok/s$b" | tee -a "$O/prefill.txt"
done
