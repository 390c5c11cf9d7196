#!/bin/sh
# The Q4_K products on the int8 tensor cores (RIGSCOPE_CUDA_MQM=1,
# kernels/quant_mma.cu) against the dp4a ones end to end: `rigscope
# generate --device cuda` on the synthetic llama-8b shape written as
# Q4_K_M (1-token prompt, 128 decode steps, ctx 512, as quant.sh runs it),
# alternately with the knob off and on, ROUNDS rounds (default 2; with
# L2PF_AB=1 also the dp4a kernels with the L2 prefetch,
# RIGSCOPE_CUDA_L2PF=1, off by default). No
# llama.cpp (quant.sh has it: RIGSCOPE_CUDA_MQM=1 TYPES=q4_k_m sh
# bench/cuda/quant.sh for the peer beside it).
#
# Build here:  go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
# Run there:   sh bench/cuda/quant-mqm.sh   (carry ["carry/rigscope-cuda.gz"])
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
Q=${Q:-/tmp/q}; mkdir -p "$Q"
SHAPE=${SHAPE:-llama-8b}
ROUNDS=${ROUNDS:-2}
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
f=$Q/$SHAPE.q4_k_m.gguf
if [ ! -f "$f" ]; then
	$B write-gguf --model "synthetic:$SHAPE" --type q4_k_m --out "$f" > "$O/write-q4_k_m.txt" 2>&1 || { echo "write-gguf failed:"; cat "$O/write-q4_k_m.txt"; exit 1; }
fi
export CUDA_CACHE_PATH=${CUDA_CACHE_PATH:-/tmp/nvcache} CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
tps() { # MQM knob value, output file (L2PF: the prefetch knob, default off)
	RIGSCOPE_CUDA_L2PF=${L2PF:-0} RIGSCOPE_CUDA_MQM=$1 timeout 300 $B generate --device cuda --model "$f" --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > "$2" 2> "$2.err" || { echo -; return; }
	python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["stats"]["decode_tokens_per_s"],1))' "$2" 2>/dev/null || echo -
}
for r in $(seq 1 "$ROUNDS"); do
	if [ $(( r % 2 )) -eq 1 ]; then a=$(tps 0 "$O/mqm0-$r.json"); b=$(tps 1 "$O/mqm1-$r.json")
	else b=$(tps 1 "$O/mqm1-$r.json"); a=$(tps 0 "$O/mqm0-$r.json"); fi
	c=; [ "${L2PF_AB:-0}" = 1 ] && c=", dp4a with the L2 prefetch $(L2PF=1 tps 0 "$O/mqm0-pf-$r.json") tok/s"
	echo "round $r $SHAPE.q4_k_m: dp4a $a tok/s, int8 tensor cores (RIGSCOPE_CUDA_MQM=1) $b tok/s$c"
done
for e in "$O"/mqm*-1.json.err; do [ -s "$e" ] && { echo "# $(basename "$e")"; tail -3 "$e"; }; done
exit 0
