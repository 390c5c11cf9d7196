#!/usr/bin/env bash
# k-quant GGUF files (Q4_K_M, Q6_K) checked against llama.cpp, side by side:
# llama.cpp (the prebuilt peer of ../shared/peers/llamacpp) quantizes
# gocoder-14m.Q8_0.gguf to Q4_K_M and Q6_K (llama_model_quantize, requantizing
# from Q8_0), greedy-decodes 32 tokens after each reference prompt, and
# rigscope's teacher-forced argmax is compared with those tokens
# (engine: TestGreedyVsPeer); rigscope's own writer (write-gguf) must make
# llama-quantize's Q4_K_M file block for block (quant:
# TestWriteMatchesLlamaQuantize) and ggml_quantize_chunk's blocks on random
# rows (tensor: TestEncodeVsGGML, through bench/peer/quantref.cpp), and
# llama.cpp greedy-decodes rigscope's Q4_K_M file as it does its own; then
# bench-cpu times both engines.
#   ../shared/peers/llamacpp/setup.sh && bench/peer-kquants.sh
# Needs g++, python3 and Go; writes to $OUT (default /tmp/rigscope-kquants).
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER:-/tmp/rigscope-peer}
B=$PEER/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
S=$PEER/llama.cpp-src
O=${OUT:-/tmp/rigscope-kquants}
MODELS=${MODELS:-../shared/models}
[ -d "$B" ] && [ -d "$S" ] || { echo "no llama.cpp peer in $PEER: run ../shared/peers/llamacpp/setup.sh first" >&2; exit 1; }
mkdir -p "$O"
g++ -O2 -std=c++17 bench/peer/quantref.cpp -I$S/include -I$S/ggml/include -o "$O/quantref" \
	-L$B -l:libggml-base.so -Wl,-rpath,$B
for t in quant greedy; do
	g++ -O2 -std=c++17 bench/peer/$t.cpp -I$S/include -I$S/ggml/include -o "$O/$t" \
		-L$B -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,$B
done
python3 -c 'import json,sys; [print(" ".join(map(str, p["prompt_ids"]))) for p in json.load(open(sys.argv[1]))["prompts"]]' \
	"$MODELS/reference-public.json" > "$O/prompts.txt"
go build -tags headless -o "$O/rigscope" .
files=
for q in Q4_K_M:15 Q6_K:18; do
	name=${q%%:*} ftype=${q##*:}
	f=$O/gocoder-14m.$name.gguf
	"$O/quant" "$MODELS/gocoder-14m.Q8_0.gguf" "$f" "$ftype" > "$O/quant-$name.log" 2>&1
	LLAMA_BINS=$B "$O/greedy" "$f" 32 < "$O/prompts.txt" > "$O/llama-$name.txt"
	RIGSCOPE_PEER_MODEL=$f RIGSCOPE_PEER_TOKENS=$O/llama-$name.txt go test -count=1 -run TestGreedyVsPeer -v ./engine/ | grep -E 'agreement|^(ok|FAIL|---)'
	files=$files${files:+,}$f
done
RIGSCOPE_GGML_QUANTREF=$O/quantref go test -count=1 -run TestEncodeVsGGML -v ./engine/tensor/ | grep -E 'identical|^(ok|FAIL|---)'
RIGSCOPE_LLAMA_Q4KM=$O/gocoder-14m.Q4_K_M.gguf go test -count=1 -run TestWriteMatchesLlamaQuantize -v ./engine/quant/ | grep -E 'blocks|^(ok|FAIL|---)'
"$O/rigscope" write-gguf --model "$MODELS/gocoder-14m.Q8_0.gguf" --type q4_k_m --out "$O/gocoder-14m.rigscope-Q4_K_M.gguf" --force
LLAMA_BINS=$B "$O/greedy" "$O/gocoder-14m.rigscope-Q4_K_M.gguf" 32 < "$O/prompts.txt" > "$O/llama-rigscope-Q4_K_M.txt"
cmp -s "$O/llama-Q4_K_M.txt" "$O/llama-rigscope-Q4_K_M.txt" && echo "llama.cpp greedy on rigscope's Q4_K_M file = on llama-quantize's: yes" ||
	echo "llama.cpp greedy on rigscope's Q4_K_M file = on llama-quantize's: NO (diff $O/llama-Q4_K_M.txt $O/llama-rigscope-Q4_K_M.txt)"
"$O/rigscope" bench-cpu --models "$files" --threads 1,2 --rounds ${ROUNDS:-3} 2>/dev/null | grep -E '^\||^medians'
