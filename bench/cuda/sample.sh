#!/bin/sh
# Device-side sampling (issue 19), one device call of about 60 s:
#  1. cuda-check -checks sample: sample_row (kernels/sample.cu) against
#     engine/sample on random and gocoder-14m logits for 7 (temperature,
#     top-k, top-p) settings (ids equal with the same uniform, kept-set
#     sizes), a chi-square of 20,000 device draws against the host's
#     probabilities, and spec.Generate through SampleIDs against host
#     sampling over Forward's logits (tokens equal, decode tok/s) on
#     gocoder-14m-hf and the llama-8b shape;
#  2. `generate --device cuda --temperature 0.8 --top-p 0.9` (ROUNDS=1 round by default) after (this
#     branch) and, when carried, before (main's binary), alternately, on the
#     llama-8b shape (synthetic bf16) and gocoder-14m-hf.
# Build here (binaries as .gz, or .xz when the carry is tight: xz -9 saves about 3 MB):
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && gzip -9 -f carry/cuda-check.test
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && gzip -9 -f carry/rigscope-cuda
#   mkdir -p carry/ms/gocoder-14m-hf && ln -f /work/shared/models/gocoder-14m-hf/* carry/ms/gocoder-14m-hf/ && ln -f /work/shared/models/reference-public.json carry/ms/
#   (carry/m2, carry/ml or carry/models do as well: gocoder-14m-hf and reference-public.json are what it reads)
#   optional "before": main's binary as carry/rigscope-cuda-before.gz (same build line in a checkout of main)
# Run there: sh bench/cuda/sample.sh
#   carry ["carry/ms", "carry/cuda-check.test.xz"] (39 MB; with the 14 MB working tree well under
#   64 MiB): the check, whose spec.Generate rows are the before/after (same process, same graphs;
#   "host" is main's path). The CLI rows run only when a rigscope binary is carried too, and
#   carry/ms + both binaries is 67.06 MB of the 67.11 MB allowed: too close, so carry the CLI
#   binary only in a call that carries a models folder anyway (carry/m2 has gocoder-14m-hf), or a
#   second call for the CLI's before/after on the llama-8b shape alone: carry
#   ["carry/rigscope-cuda.gz", "carry/rigscope-cuda-before.gz"].
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
# unpack NAME DEST: carry/NAME.gz or carry/NAME.xz (xz, else python3's lzma) to DEST; fails when neither
unpack() {
	if [ -f "carry/$1.gz" ]; then gunzip -c "carry/$1.gz" > "$2"
	elif [ -f "carry/$1.xz" ]; then
		xz -dc "carry/$1.xz" > "$2" 2>/dev/null || python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'))" "carry/$1.xz" "$2"
	else return 1; fi
	chmod +x "$2"
}
M=""
for d in carry/ms carry/m2 carry/ml carry/models; do
	if [ -d "$d/gocoder-14m-hf" ]; then M=$d; break; fi
done
BINS=""
unpack rigscope-cuda-before /tmp/rigscope-before && BINS="before"
unpack rigscope-cuda /tmp/rigscope-after && BINS="$BINS after"
if unpack cuda-check.test /tmp/cuda-check.test && [ -n "$M" ]; then
	echo "# cuda-check -checks sample (models $M)"
	timeout 150 /tmp/cuda-check.test -test.run TestCUDACheck -test.v -models "$M" -checks sample > "$O/check-sample.txt" 2>&1
	echo "rc $?"; grep -v "^=== RUN" "$O/check-sample.txt"
fi
IDS=$(seq -s, 3 130)
[ -n "$BINS" ] || { echo "# generate: no rigscope binary carried, skipped"; exit 0; }
echo "# generate --device cuda --temperature 0.8 --top-p 0.9 --seed 7 (decode tok/s)"
for r in $(seq 1 ${ROUNDS:-1}); do
	for b in $BINS; do
		timeout 100 /tmp/rigscope-$b generate --device cuda --model "synthetic:llama-8b?dtype=bf16" --ctx 512 --prompt-ids "$IDS" --max-tokens 129 --ignore-eos --temperature 0.8 --top-p 0.9 --seed 7 --json > "$O/gen8b-$b$r.json" 2> "$O/gen8b-$b$r.err"
		MS=8b
		if [ -n "$M" ]; then
			timeout 100 /tmp/rigscope-$b generate --device cuda --model "$M/gocoder-14m-hf" --ctx 512 --prompt-ids "$IDS" --max-tokens 257 --ignore-eos --temperature 0.8 --top-p 0.9 --seed 7 --json > "$O/gengc-$b$r.json" 2> "$O/gengc-$b$r.err"
			MS="8b gc"
		fi
		for m in $MS; do
			python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print(sys.argv[2], 'decode tok/s', round(s['decode_tokens_per_s'],1), 'tokens', s['generated_tokens'])" "$O/gen$m-$b$r.json" "$m $b round $r" 2>/dev/null || tail -3 "$O/gen$m-$b$r.err"
		done
	done
done
