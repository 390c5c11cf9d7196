#!/bin/sh
# Plain greedy decoding with steps enqueued ahead (gpu/cuda/ahead.go, the default) against one step at a time
# (RIGSCOPE_CUDA_AHEAD=0) on the product path: `generate --device cuda` beside `cuda-bench` on the llama-8b
# shape (bf16 synthetic weights), alternately, as bench/cuda/product.sh runs them (384-token prompt, 256 new).
# Build here:  go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:   sh bench/cuda/ahead.sh   (carry ["carry/rigscope-cuda.gz"])
set -u
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
O=${OUT:-/tmp/out}; mkdir -p "$O"
SHAPE=${SHAPE:-llama-8b}
IDS=$(seq -s, 3 386)
gen() { # $1: output name; the environment picks the mode
	timeout 200 $B generate --device cuda --model "synthetic:$SHAPE?dtype=bf16" --ctx 1024 --prompt-ids "$IDS" --max-tokens 257 --ignore-eos --json > "$O/$1.json" 2> "$O/$1.err"
	python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print(sys.argv[2], 'decode tok/s', round(s['decode_tokens_per_s'],1), 'tokens', s['generated_tokens'])" "$O/$1.json" "$1" || tail -3 "$O/$1.err"
}
for r in $(seq 1 ${ROUNDS:-2}); do
	timeout 200 $B cuda-bench --shapes "$SHAPE" --ctx 512 > "$O/bench$r.txt" 2>&1
	grep -hE "^$SHAPE" "$O/bench$r.txt" | sed "s/^/cuda-bench round $r: /"
	gen "generate-ahead$r"
	RIGSCOPE_CUDA_AHEAD=0 gen "generate-one$r"
done
