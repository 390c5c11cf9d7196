#!/bin/sh
# kvbf16 (issue 19, bf16 KV cache), second probe: needs /work/shared/models/gocoder-14m-hf
# and /work/shared/models/reference-public.json carried as $P/models/<same names>.
# $P/cc.test.xz: `go test -c -tags cuda` of branch kvbf16 with the embedded PTX left out
# (every run loads a cubin through RIGSCOPE_CUDA_PTX); cubins built here with
# ptxas -arch=sm_90 -O3: new90 = the branch's kernels (bf16 attention: 16-byte loads, two
# chunks in flight), old90 = main's kernels, d3 = the branch with -DATT_KV_DEPTH=3.
# At most 75 s of GPU time (timeouts 20+20+13+11+11; s11 ran kernels+kv+kvbench in 12 s after the JIT).
set -u
xz -dc "$P/cc.test.xz" > /tmp/kvbf16.test && chmod +x /tmp/kvbf16.test
for c in new90 old90 d3; do [ -f "$P/$c.cubin.xz" ] && xz -dc "$P/$c.cubin.xz" > /tmp/kvbf16-$c.cubin; done
C="/tmp/kvbf16.test -test.run TestCUDACheck -test.timeout 0 -models $P/models"
run() { # $1 cubin, $2 output name, $3 checks, $4 timeout
	[ -f /tmp/kvbf16-$1.cubin ] || { echo "no $1 cubin"; return; }
	echo "$(date +%T) $2: $3 with $1"
	RIGSCOPE_CUDA_PTX=/tmp/kvbf16-$1.cubin timeout $4 $C -checks $3 > "$OUT/$2.txt" 2> "$OUT/$2.err"
	echo "exit status $?" >> "$OUT/$2.txt"
	grep -E '^[0-9]|attention kernels|exit status|FAIL|rror|^(float32|bf16) |^kv |teacher|slots|^(f32|bf16) [0-9]' "$OUT/$2.txt" | head -40
	tail -2 "$OUT/$2.err"
}
run new90 bench-new kvbench 20
run new90 check kv 20
run new90 kernels kernels 13
grep -E 'kv bf16' "$OUT/kernels.txt" | grep -v ' ok$' | head; grep -cE 'kv bf16.* ok$' "$OUT/kernels.txt" | sed 's/$/ bf16-cache kernel-check lines ok/'
run old90 bench-old kvbench 11
run d3 bench-d3 kvbench 11
