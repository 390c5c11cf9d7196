#!/bin/sh
# Quantized files on the GPU, rigscope against llama.cpp CUDA on the same
# bytes (issue 23), in one device call: builds llama.cpp with CUDA from
# carry/llamacpp-cuda (../shared/peers/llamacpp-cuda), writes the synthetic
# llama-8b shape as GGUF in each type with `rigscope write-gguf`, then runs
# llama-bench (tg128, FA on, all layers on the GPU) and `rigscope generate
# --device cuda` (a 1-token prompt, 128 decode steps, ctx 512) alternately
# on each file, ROUNDS rounds (default 2), and prints a table: file, bytes,
# llama.cpp tok/s, rigscope tok/s, ratio, and the read-bandwidth bound
# (BW / the weight bytes a decode step reads: the file less the embedding
# table, of which a step reads one row).
#
# Build here:
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
#   mkdir -p carry && cp -r ../shared/peers/llamacpp-cuda carry/
# Run there:   sh bench/cuda/quant.sh   (carry ["carry/rigscope-cuda.gz", "carry/llamacpp-cuda"])
#
# Each step is skipped when its output is already there (the llama.cpp
# build in /tmp/llamacpp-cuda, the files in $Q), so a warm machine can run
# the script again with other TYPES inside the 10-minute limit of a call;
# the build takes about 280 s and writing a file 20-120 s. Knobs: TYPES
# (default "bf16 q8_0 q4_k_m q4_0"; f16 too), SHAPE (llama-8b or llama-1b),
# ROUNDS, BW (bytes/s, default 4.6e12: H200 read bandwidth as
# bench/cuda/README.md measures it), Q (where the files go, default /tmp/q;
# the four default llama-8b files take 46 GB), LLAMA=0 (rigscope only: no
# llama.cpp build or runs; its column reads "-").
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
Q=${Q:-/tmp/q}; mkdir -p "$Q"
SHAPE=${SHAPE:-llama-8b}
TYPES=${TYPES:-bf16 q8_0 q4_k_m q4_0}
ROUNDS=${ROUNDS:-2}
BW=${BW:-4.6e12}
DEVICE=${DEVICE:-cuda} # cpu: a dry run of the script without a GPU (SHAPE=small)
LB=${LB:-/tmp/llamacpp-cuda/llama-bench}

gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda

if [ "${LLAMA:-1}" = 1 ] && [ ! -x "$LB" ]; then
	t0=$(date +%s)
	if ! bash carry/llamacpp-cuda/build.sh > "$O/llama-build.txt" 2>&1; then
		echo "llama.cpp CUDA build failed:"; tail -20 "$O/llama-build.txt"; tail -30 /tmp/llamacpp-cuda/build.log 2>/dev/null; exit 1
	fi
	echo "built llama.cpp CUDA in $(( $(date +%s) - t0 )) s"
fi

for t in $TYPES; do
	f=$Q/$SHAPE.$t.gguf
	[ -f "$f" ] && continue
	t0=$(date +%s)
	if ! $B write-gguf --model "synthetic:$SHAPE" --type "$t" --out "$f" > "$O/write-$t.txt" 2>&1; then
		echo "write-gguf $t failed:"; cat "$O/write-$t.txt"; continue
	fi
	echo "$(cat "$O/write-$t.txt") in $(( $(date +%s) - t0 )) s"
done

# tok/s of one llama-bench run (jsonl: avg_ts of the tg128 test) and one
# rigscope run (--json: stats.decode_tokens_per_s); "-" when it failed.
llama_tps() {
	[ "${LLAMA:-1}" = 1 ] || { echo -; return; }
	timeout 300 "$LB" -m "$1" -ngl 99 -p 0 -n 128 -r 3 -fa 1 -o jsonl > "$2" 2> "$2.err" || { echo -; return; }
	python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(round(rows[-1]["avg_ts"],1))' "$2" 2>/dev/null || echo -
}
rig_tps() {
	timeout 300 $B generate --device "$DEVICE" --model "$1" --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > "$2" 2> "$2.err" || { echo -; return; }
	python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["stats"]["decode_tokens_per_s"],1))' "$2" 2>/dev/null || echo -
}

: > "$O/quant-runs.txt"
for r in $(seq 1 "$ROUNDS"); do
	for t in $TYPES; do
		f=$Q/$SHAPE.$t.gguf
		[ -f "$f" ] || continue
		if [ $(( r % 2 )) -eq 1 ]; then # alternate which engine goes first
			a=$(llama_tps "$f" "$O/llama-$t-$r.jsonl"); b=$(rig_tps "$f" "$O/rig-$t-$r.json")
		else
			b=$(rig_tps "$f" "$O/rig-$t-$r.json"); a=$(llama_tps "$f" "$O/llama-$t-$r.jsonl")
		fi
		echo "$t $r $a $b" >> "$O/quant-runs.txt"
		echo "round $r $t: llama.cpp $a tok/s, rigscope $b tok/s"
	done
done

# The table: medians over rounds (of two: the mean), the bound from the
# bytes outside token_embd.
python3 - "$O/quant-runs.txt" "$Q" "$SHAPE" "$BW" $TYPES <<'EOF'
import os, statistics, sys
runs, q, shape, bw, types = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
vocab, dim = {"llama-8b": (128256, 4096), "llama-1b": (128256, 2048), "small": (4096, 512)}[shape]
embd_bytes_per_weight = {"bf16": 2, "f16": 2, "q8_0": 34/32, "q4_0": 18/32, "q4_k_m": 144/256}
res = {}
for line in open(runs):
    t, r, a, b = line.split()
    res.setdefault(t, ([], []))
    if a != "-": res[t][0].append(float(a))
    if b != "-": res[t][1].append(float(b))
print("| file | bytes | llama.cpp tok/s | rigscope tok/s | ratio | bound tok/s (rigscope of it) |")
print("|---|---|---|---|---|---|")
for t in types:
    f = os.path.join(q, f"{shape}.{t}.gguf")
    if not os.path.exists(f): continue
    size = os.path.getsize(f)
    a = statistics.median(res[t][0]) if t in res and res[t][0] else None
    b = statistics.median(res[t][1]) if t in res and res[t][1] else None
    bound = bw / (size - vocab * dim * embd_bytes_per_weight[t])
    fmt = lambda v: f"{v:.1f}" if v else "failed"
    if os.environ.get("LLAMA", "1") != "1": a, fmt_a = None, "-"
    else: fmt_a = fmt(a)
    ratio = f"{b / a:.2f}x" if a and b else "-"
    share = f" ({100 * b / bound:.0f}%)" if b else ""
    print(f"| {os.path.basename(f)} | {size / 1e9:.2f} GB | {fmt_a} | {fmt(b)} | {ratio} | {bound:.0f}{share} |")
EOF
for t in $TYPES; do # why a run failed, if one did
	for e in "$O"/rig-$t-1.json.err "$O"/llama-$t-1.jsonl.err; do
		grep -q "^{" "${e%.err}" 2>/dev/null || { [ -s "$e" ] && { echo "# $(basename "$e")"; tail -3 "$e"; }; }
	done
done
