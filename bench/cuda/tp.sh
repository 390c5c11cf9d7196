#!/bin/sh
# Tensor parallelism on one GPU (issue 20), one device call: the ranks of a
# target share the H200 and join through each step allreduce backend.
#   1. cuda-check -checks tp: greedy at TP 2/4/8 with oneshot, twoshot, host
#      and auto = TP 1 on the gocoder fixtures (12 prompts), per-call p50/p99
#      and bytes as the run measured them; nccl refused with its reason.
#   2. cuda-bench on the llama-8b shape at TP 1/2/4 with every backend:
#      decode tok/s, verify-5/decode, allreduce share of the step, p50/p99.
#   3. generate --json through the engine (what users run) at TP 2 with
#      each backend: the stats the dashboard shows, each run's log in
#      runs/ of the archive (the dashboard of a run, here:
#      bench/cuda/replay.sh runs/ID.jsonl shot.png); and the same with
#      RIGSCOPE_CUDA_RANKDEVS=each (gen-each-*.json: the one-rank-per-GPU
#      path on one GPU; the tokens must equal gen-*.json's).
#   4. allreduce-bench --device cuda (the cuda.Group backends, ranks sharing
#      the GPU) 2/4/8 ranks.
#   5. Bad input: each must fail with its message.
#   6. plan (issue 27): plan --check --device cuda over TP 1/2/4 x oneshot,
#      twoshot, host, auto x {none, ngram k=2,4}: the planner measures each
#      TP size afresh through the engine (the step's own allreduce table,
#      the forward timed per backend), then runs every configuration, each
#      after an unmeasured warm-up run (--warmup); the report is predicted
#      against measured tok/s with the median absolute error (target 10%)
#      and the paired backend ordering. About 2 minutes at most (PLAN_TIME, and the load).
#      PARTS=plan alone needs only carry/rigscope-cuda[.xz] and carry/m3.
# Build here:
#   go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/rigscope-cuda . && xz -9 -f carry/rigscope-cuda
#   go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/cuda-check.test ./gpu/cuda && xz -9 -f carry/cuda-check.test
#   carry/m3: gocoder-14m-hf, gocoder-14m-eagle3, reference-public.json (cp -al from ../shared/models)
# Run there:  sh bench/cuda/tp.sh   (carry ["carry/rigscope-cuda.xz", "carry/cuda-check.test.xz", "carry/m3"])
#             PARTS=plan sh bench/cuda/tp.sh   (carry ["carry/rigscope-cuda.xz", "carry/m3"])
# Knobs: CHECKS (default tp), SHAPE (llama-8b), STEPS (100), ROUNDS (7) and PLAN_TIME (100s: the plan check's rounds and time), T_PLAN (200 s); PARTS (default
# "check bench generate serve allreduce bad plan") picks the parts to run.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
P=" ${PARTS:-check bench generate serve allreduce bad} "
has() { case "$P" in *" $1 "*) return 0;; esac; return 1; }
# carry/NAME.xz or carry/NAME, unpacked to /tmp/NAME.
unpack() {
	if [ -f "carry/$1.xz" ]; then xz -dc "carry/$1.xz" > "/tmp/$1"; else cp "carry/$1" "/tmp/$1"; fi && chmod +x "/tmp/$1"
}
unpack rigscope-cuda; B=/tmp/rigscope-cuda
if has check; then unpack cuda-check.test; fi
M=carry/m3
export RIGSCOPE_CACHE_DIR=/tmp/rigscope-cache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$O/gpu.txt" 2>&1
if has check; then
	(cd gpu/cuda && timeout 300 /tmp/cuda-check.test -test.run TestCUDACheck -test.v -models ../../$M -checks "${CHECKS:-tp}") > "$O/check.txt" 2>&1
	echo "check rc $?" >> "$O/check.txt"
fi
if has bench; then
	timeout 300 $B cuda-bench --shapes "${SHAPE:-llama-8b}" --tp 1,2,4 --allreduce oneshot,twoshot,host,auto --steps "${STEPS:-100}" > "$O/cudabench.txt" 2>&1
	echo "cuda-bench rc $?" >> "$O/cudabench.txt"
	# The one-rank-per-GPU path on one GPU (rankdev.go): its cost against
	# the rows above (the vocab rows' copies home, per-rank step copies).
	RIGSCOPE_CUDA_RANKDEVS=each timeout 200 $B cuda-bench --shapes "${SHAPE:-llama-8b}" --tp 2,4 --allreduce oneshot,host --steps "${STEPS:-100}" > "$O/cudabench-each.txt" 2>&1
	echo "cuda-bench each rc $?" >> "$O/cudabench-each.txt"
fi
if has generate; then
	for b in oneshot twoshot host auto; do
		timeout 60 $B generate --device cuda --model $M/gocoder-14m-hf --tp 2 --allreduce $b --prompt "func main() {" --max-tokens 64 --ignore-eos --json --log-dir "$O/runs" > "$O/gen-$b.json" 2> "$O/gen-$b.err"
	done
	# The path of one rank per GPU (every rank opens the GPU as its own
	# device, rankdev.go): the same tokens as gen-$b.json.
	for b in oneshot twoshot host auto; do
		RIGSCOPE_CUDA_RANKDEVS=each timeout 60 $B generate --device cuda --model $M/gocoder-14m-hf --tp 2 --allreduce $b --prompt "func main() {" --max-tokens 64 --ignore-eos --json > "$O/gen-each-$b.json" 2> "$O/gen-each-$b.err"
	done
fi
# The Prometheus endpoint after a TP 2 request through serve (the run's
# allreduce histograms and byte counters).
if has serve; then
	$B serve --device cuda --model $M/gocoder-14m-hf --tp 2 --allreduce twoshot --addr 127.0.0.1:18080 > "$O/serve.log" 2>&1 &
	SP=$!
	for i in $(seq 1 60); do curl -s 127.0.0.1:18080/metrics > /dev/null 2>&1 && break; sleep 0.5; done
	curl -s 127.0.0.1:18080/v1/completions -H 'Content-Type: application/json' -d '{"prompt":"func main() {","max_tokens":64}' > "$O/serve-completion.json" 2>&1
	curl -s 127.0.0.1:18080/metrics > "$O/metrics.txt" 2>&1
	kill $SP 2>/dev/null
fi
if has allreduce; then
	timeout 120 $B allreduce-bench --device cuda --ranks 2,4,8 --sizes 1K:64M > "$O/allreduce.txt" 2>&1
fi
if has bad; then
	for bad in "--tp 2 --allreduce nccl" "--tp 2 --allreduce nccl --nccl-proto LL --nccl-max-channels 2" "--tp 2 --allreduce oneshot --nccl-proto LL" "--tp 2 --allreduce nccl --nccl-algo NVLS" "--tp 2 --allreduce ring" "--tp 2 --gpus 0,0" "--tp 2 --gpus 7" "--tp 2 --gpus 0,1" "--tp 2 --gpus 0,1,2" "--tp 3"; do
		echo "## generate $bad" >> "$O/bad.txt"
		timeout 60 $B generate --device cuda --model $M/gocoder-14m-hf $bad --prompt "x" --max-tokens 4 >> "$O/bad.txt" 2>&1
		echo "rc $?" >> "$O/bad.txt"
	done
fi
if has plan; then
	# The planner on GPU ranks (issue 27): predicted against measured, TP
	# size by TP size, round by round. auto is predicted from the step's own
	# table (the one a run with --allreduce auto picks from).
	start=$(date +%s)
	# --max-time: no round starts that would end past it (the rounds done
	# are reported); the timeout is only a backstop.
	timeout ${T_PLAN:-200} $B plan --check --model $M/gocoder-14m-hf --device cuda --tp 1,2,4 --allreduce oneshot,twoshot,host,auto \
		--drafter none,ngram --k 2,4 --rounds ${ROUNDS:-7} --max-time ${PLAN_TIME:-100s} --max-tokens 128 --warmup --max-error 0.10 --prompt "func main() {" \
		--json-out "$O/plan.json" > "$O/plan.txt" 2> "$O/plan.err"
	echo "plan rc $? in $(( $(date +%s) - start )) s" >> "$O/plan.txt"
fi
[ -f "$O/check.txt" ] && { echo "# check"; tail -40 "$O/check.txt"; }
[ -f "$O/plan.txt" ] && { echo "# plan"; tail -60 "$O/plan.txt"; grep -v "^plan: measuring" "$O/plan.err" | tail -5; }
[ -f "$O/cudabench.txt" ] && { echo "# cuda-bench"; grep -E "^(shape|llama|#)" "$O/cudabench.txt" | tail -20; }
if has generate; then
	echo "# generate tp 2"
	for b in oneshot twoshot host auto; do
		python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['stats']; print(sys.argv[2], 'tok/s', round(s['decode_tokens_per_s'],1), 'ar ms', round(s.get('allreduce_ms',0),2), 'share', round(s.get('allreduce_share',0),3), 'p50', s.get('allreduce_p50_us'), 'p99', s.get('allreduce_p99_us'), 'bytes', s.get('bytes_moved'), s.get('allreduce_by_size'))" "$O/gen-$b.json" $b || tail -3 "$O/gen-$b.err"
	done
fi
[ -f "$O/bad.txt" ] && { echo "# bad input"; cat "$O/bad.txt"; }
[ -f "$O/metrics.txt" ] && { echo "# prometheus"; grep -E "allreduce|rank_bytes" "$O/metrics.txt" | grep -v "^#" | head -20; }
[ -f "$O/allreduce.txt" ] && { echo "# allreduce-bench"; grep -E "^#|auto" "$O/allreduce.txt" | head -30; }
# Few files come back from a device call: everything goes back as one archive.
(cd "$O" && tar czf /tmp/tp-out.tgz . && find . -mindepth 1 -delete && mv /tmp/tp-out.tgz .)
true
