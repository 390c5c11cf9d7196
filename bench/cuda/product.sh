#!/bin/sh
# The product path against the measured path, one device call: `generate
# --device cuda` (what users run) next to `cuda-bench` (the kernel-level
# decode benchmark) on the same shape, alternately, and speculative
# decoding through `bench --device cuda` (plain vs draft model vs EAGLE-3 on
# the gocoder pair).
# Build here:  go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:   sh bench/cuda/product.sh   (carry ["carry/m2", "carry/rigscope-cuda.gz"])
set -u
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
O=${OUT:-/tmp/out}; mkdir -p "$O"
SHAPE=${SHAPE:-llama-8b}
# A 384-token prompt and 256 new tokens: the decode steps see 384..640
# cached positions, centred on cuda-bench's 512.
IDS=$(seq -s, 3 386)
for r in $(seq 1 ${ROUNDS:-2}); do
	timeout 200 $B cuda-bench --shapes "$SHAPE" --ctx 512 > "$O/bench$r.txt" 2>&1
	timeout 200 $B generate --device cuda --model "synthetic:$SHAPE?dtype=bf16" --ctx 1024 --prompt-ids "$IDS" --max-tokens 257 --ignore-eos --json > "$O/generate$r.json" 2> "$O/generate$r.err"
done
# SPEC=0 skips the speculative part (carry/m2 is 29 MB: it does not fit
# beside the llama.cpp sources of bench/cuda/suite.sh).
if [ "${SPEC:-1}" = 1 ]; then
	RIGSCOPE_MODELS=carry/m2 timeout 200 $B bench --device cuda --drafters model,eagle3 --k 2,4,6 --tree 0 > "$O/spec.txt" 2>&1
	# The draft model's acceptance on the GPU against the CPU's (same prompts).
	RIGSCOPE_MODELS=carry/m2 timeout 200 $B bench --device cpu --drafters model,eagle3 --k 2,4,6 --tree 0 > "$O/spec-cpu.txt" 2>&1
fi
echo "# cuda-bench"; grep -hE "^(shape|llama|qwen|mixtral|deepseek)" "$O"/bench*.txt
echo "# generate --device cuda"
for r in $(seq 1 ${ROUNDS:-2}); do
	python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print('round', sys.argv[2], 'decode tok/s', round(s['decode_tokens_per_s'],1), 'tokens', s['generated_tokens'], 'stop', s['stop_reason'], 'prefill ms', round(s['prefill_ms'],1))" "$O/generate$r.json" $r || tail -5 "$O/generate$r.err"
done
if [ "${SPEC:-1}" = 1 ]; then
	echo "# bench --device cuda (gocoder pair)"; cat "$O/spec.txt"
	echo "# bench --device cpu (gocoder pair)"; cat "$O/spec-cpu.txt"
fi
if [ -f carry/rigscope-cuda-before.gz ]; then
	gunzip -c carry/rigscope-cuda-before.gz > /tmp/rigscope-before && chmod +x /tmp/rigscope-before
	RIGSCOPE_MODELS=carry/m2 timeout 200 /tmp/rigscope-before bench --device cuda --drafters model,eagle3 --k 4 --tree 0 > "$O/spec-before.txt" 2>&1
	echo "# before (carry/rigscope-cuda-before.gz)"; cat "$O/spec-before.txt"
fi
