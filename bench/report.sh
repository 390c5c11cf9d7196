#!/usr/bin/env bash
# Reproduces the tables of the closing notes on this machine (CPU only):
# golden numerics, TP equality, EAGLE-3 reference, allreduce bench, the
# speculative-decoding bench and peak RSS per fixture. Needs ../shared/models.
# Takes 10-20 minutes on 2 cores. The CPU-vs-llama.cpp table is
# bench-cpu (see bench/cpu_device.sh for the quiet-machine run) and the
# GPU tables are bench/cuda/run.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
M=../shared/models
command -v /usr/bin/time >/dev/null || { echo "report: needs GNU time (apt-get install time)" >&2; exit 1; }
go build -o bin/rigscope .
echo "== greedy vs reference, per format"
go test -count=1 -run 'TestGoldenGreedy$|TestStories260K' -v ./engine/ | grep -E 'file|of 12|PASS|FAIL' || true
echo "== TP 2/4/8 x backends vs TP 1"
go test -count=1 -run TestGoldenTensorParallel -v ./engine/ | grep -E 'TP=|PASS|FAIL' || true
echo "== EAGLE-3 vs the PyTorch reference"
go test -count=1 -run TestGoldenEagle3Reference -v ./engine/spec/eagle3/ | grep -E 'k=|PASS|FAIL' || true
echo "== lossless sampling (chi-square)"
go test -count=1 -run TestGoldenSamplingIsLossless -v ./engine/spec/ | grep -E 'chi|PASS|FAIL' || true
echo "== allreduce"
./bin/rigscope allreduce-bench --ranks 2,4,8 --sizes 1K:16M --iters 20
echo "== speculative decoding"
./bin/rigscope bench --drafters ngram,model,eagle3 --k 2-8 --tree 0,2
echo "== peak RSS of generate (KiB) next to the file size"
for m in gocoder-14m-hf gocoder-14m.Q8_0.gguf gocoder-draft-1m-hf gocoder-draft-1m.F16.gguf gocoder-draft-1m.llama2c.bin; do
	/usr/bin/time -v -o bin/time.txt ./bin/rigscope generate --model "$M/$m" --prompt "package main" --max-tokens 64 --ctx 1024 >/dev/null 2>&1
	echo "$m size=$(du -sbL "$M/$m" | cut -f1) rss_kb=$(awk '/Maximum resident/ {print $6}' bin/time.txt)"
done
