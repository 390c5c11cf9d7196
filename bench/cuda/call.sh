# Sourced by the one-call scripts under bench/cuda/results (bash): the
# frame every such call repeats. call_init NAME: outputs under $OUT (or
# /tmp/out), stdout and stderr teed to $OUT/NAME.txt, the clock started,
# the card named. el STEP: a heading with the seconds since the start;
# left N: fewer than N seconds have passed; snap: $OUT/x as x.tgz (a call
# returns at most 8 files); row FILE: cuda-bench's result row. Wait for
# background jobs by PID, never with a bare `wait`: it waits for the tee too.
call_init() {
  O=${OUT:-/tmp/out}; mkdir -p "$O/x"; exec > >(tee "$O/$1.txt") 2>&1
  t0=$(date +%s)
  nvidia-smi --query-gpu=name --format=csv,noheader
}
el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
snap() { (cd "$O" && tar czf x.tgz x); }
row() { grep -A1 '^shape' $1 | tail -1; }
