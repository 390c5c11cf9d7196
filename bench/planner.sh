#!/usr/bin/env bash
# The what-if planner against measurement on this machine's CPU ranks
# (issue 27): over TP 1/2/4/8 x the six CPU backends x {none, ngram,
# model} x k = 2, 4 on the gocoder pair, the planner's predicted tok/s
# (calibrated afresh just before) beside the measured tok/s of the same
# configuration, runs alternated over ROUNDS passes, forwards and
# backwards, each TP size measured just before its runs; the median
# absolute error and the backend ordering (best rounds, and paired round
# by round), per TP size. bench/results/planner-amd-epyc-s2.md.
#
#   bench/planner.sh                 # the full grid (7 rounds, 32 tokens)
#   bench/planner.sh --json-out r.json   # and every round's figures as JSON
#   ROUNDS=3 MAX_TOKENS=16 bench/planner.sh --tp 1,2   # shorter
#
# Extra arguments go to `rigscope plan --check`. The load average is
# printed before and after (a shared machine's load moves the measured
# rates; the check compares each configuration's best round against the
# fastest calibration repetitions for that reason).
set -euo pipefail
cd "$(dirname "$0")/.."
models=${MODELS:-../shared/models}
rounds=${ROUNDS:-7}
max_tokens=${MAX_TOKENS:-32}
prompts=${PROMPTS:-1}
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc) CPUs; uptime: $(uptime)"
go build -tags headless -o bin/rigscope-headless .
bin/rigscope-headless plan --check \
	--model "$models/gocoder-14m-hf" --draft "$models/gocoder-draft-1m.F16.gguf" \
	--tp 1,2,4,8 --allreduce ring,tree,oneshot,twoshot,compressed,compressed-bf16 \
	--drafter none,ngram,model --k 2,4 \
	--rounds "$rounds" --max-tokens "$max_tokens" --prompts "$prompts" "$@"
echo "# uptime after: $(uptime)"
