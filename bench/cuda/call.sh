# Sourced by the one-call scripts under bench/cuda/results (bash): the
# frame every such call repeats. call_init NAME: outputs under $OUT (or
# /tmp/out), stdout and stderr teed to $OUT/NAME.txt, the clock started,
# the card named. el STEP: a heading with the seconds since the start;
# left N: fewer than N seconds have passed; snap: $OUT/x as x.tgz (a call
# returns at most 8 files); row FILE: cuda-bench's result row. unpack DIR
# NAME...: each DIR/NAME.xz to /tmp/NAME, all at once, executable.
# q4km_start BIN: BIN writes the synthetic llama-8b as Q4_K_M to $F in the
# background (45 s on one H100, over 115 s on session 43's: start it first
# and run the checks meanwhile); q4km_wait: until it is written. Wait for
# background jobs by PID, never with a bare `wait`: it waits for the tee
# too.
call_init() {
  O=${OUT:-/tmp/out}; mkdir -p "$O/x"; exec > >(tee "$O/$1.txt") 2>&1
  t0=$(date +%s)
  nvidia-smi --query-gpu=name --format=csv,noheader
}
el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
snap() { (cd "$O" && tar czf x.tgz x); }
row() { grep -A1 '^shape' $1 | tail -1; }
unpack() {
  local d=$1 n p=(); shift
  for n; do xz -dc "$d/$n.xz" > "/tmp/$n" & p+=($!); done
  wait "${p[@]}"
  for n; do chmod +x "/tmp/$n"; done
}
q4km_start() {
  mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf; el "write q4_k_m (background)"
  ( "$1" write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null 2>&1; touch /tmp/q/done ) &
}
q4km_wait() { while [ ! -f /tmp/q/done ]; do sleep 2; done; }
# The measurements the calls repeat, each with an environment ENV for the run (X=1: none) and its
# output in $O/x. ea NAME ENV: the gocoder EAGLE-3 check on the device ($C, the models in
# /tmp/m), its summary lines. gen NAME ENV: `generate` on $F (prompt ids 3..386, 64 tokens), the
# md5 of its JSON without the stats (equal md5s: equal tokens). cb NAME ENV ARGS ROUND:
# cuda-bench ARGS ($B), its result row and the kinds in $CB_KINDS (default attention).
ea() { el "eagle $1"; env $2 timeout 100 $C -test.run TestCUDACheck -checks eagle -eagle8b=false -eagledevs cuda -models /tmp/m > $O/x/eagle-$1.txt 2>&1; echo "rc $?"
  grep -E "^cuda |graphs, device|decode time per step|FAIL|rror" $O/x/eagle-$1.txt | head -8; }
gen() { timeout 120 env $2 $B generate --device cuda --model $F --ctx 1024 --prompt-ids "$(seq -s, 3 386)" --max-tokens 64 --ignore-eos --json > $O/x/gen-$1.json 2> $O/x/gen-$1.err
  python3 -c "import json,sys,hashlib; d=json.load(open(sys.argv[1])); d.pop('stats',None); print(sys.argv[2], hashlib.md5(json.dumps(d,sort_keys=True).encode()).hexdigest(), repr(str(d)[:60]))" $O/x/gen-$1.json $1 || tail -3 $O/x/gen-$1.err; }
# bw NAME ENV FLAG...: the quant bandwidth table ($C: -checks quant -parts bandwidth -bwsweep=false
# -bwmma=false and the FLAGs, e.g. -bwtypes=Q4_K -bwtall=4) in $O/x/bw-NAME.txt, its rows with PDL.
# gluus NAME: from that table, the Q4_K GLU's time at T=1 with PDL (us).
bw() { local n=$1 e=$2; shift 2; el "bandwidth $n"
  timeout 100 env $e $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts bandwidth -bwsweep=false -bwmma=false "$@" > $O/x/bw-$n.txt 2>&1
  echo "rc $?"; grep -E "pdl \(" $O/x/bw-$n.txt; }
gluus() { grep -E "^Q4_K +gate_up 2x14336x4096 +T=1 .*pdl" $O/x/bw-$1.txt | head -1 | sed -E 's/.* ([0-9.]+) us pdl.*/\1/'; }
cb() { timeout 60 env $2 $B cuda-bench $3 --steps 50 > $O/x/cb-$1-$4.txt 2>&1; echo "$1 round $4: $(row $O/x/cb-$1-$4.txt)"; grep -E "^(${CB_KINDS:-attention}) " $O/x/cb-$1-$4.txt; }
# checks NAME...: -checks kernels,kv ($C) with each /tmp/NAME.cubin in $O/x/chk-NAME.txt: its exit
# status, its count of ok lines and the kv table's rows.
checks() { local v; for v; do el "checks $v"
  timeout 240 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks kernels,kv > $O/x/chk-$v.txt 2>&1; echo "rc $?"
  grep -cE " ok" $O/x/chk-$v.txt; grep -E "^(float32|bf16) |FAIL" $O/x/chk-$v.txt | head -24; snap
done; }
# versus NAME: /tmp/NAME.cubin against main's image ($B, $C): `checks NAME` while the Q4_K_M file is
# written, cuda-bench of both alternating for two rounds, then both `generate` md5s (results/s43
# n4.sh wrote it out inline).
versus() { local v=$1
  q4km_start $B; checks $v; q4km_wait
  for r in 1 2; do el "q4_k_m round $r"
    cb main X=1 "--model $F" $r; cb $v RIGSCOPE_CUDA_PTX=/tmp/$v.cubin "--model $F" $r; snap
  done
  el "generate"; gen main X=1; gen $v RIGSCOPE_CUDA_PTX=/tmp/$v.cubin
  el end; snap
}
# attntrace NAME...: the attention trace (-checks attntrace, $C) with each /tmp/NAME.cubin (an
# ATT_TRACE build) in $O/trace-NAME.txt, its launch and merging-block lines.
attntrace() { local v; for v; do el "trace $v"
  timeout 60 env RIGSCOPE_CUDA_PTX=/tmp/$v.cubin $C -test.run TestCUDACheck -test.timeout 0 -checks attntrace > $O/trace-$v.txt 2>&1; echo "rc $?"
  grep -E "^(launch:|merging)|FAIL|rror" $O/trace-$v.txt | head -10
done; }
# ncu_attn: ncu's PC sampling of one graphed attn_128_1_kb_t1 launch of $B (cuda-bench, bf16
# llama-8b, ctx 512): the source page per SASS instruction in $O/x/sass.csv.gz, the details page
# in $O/x/details.txt (the report itself, about 40 MB, stays out of x.tgz).
ncu_attn() { el ncu
  timeout 150 ncu --cache-control none --clock-control none -k 'regex:^attn_128_1_kb_t1$' --launch-skip 64 -c 1 \
    --warp-sampling-interval 0 --section WarpStateStats --section SourceCounters \
    --import-source no -o $O/attn $B cuda-bench --shapes llama-8b --steps 3 > $O/x/ncu-run.txt 2>&1; echo "rc $?"
  tail -3 $O/x/ncu-run.txt
  ncu -i $O/attn.ncu-rep --page source --csv --print-source sass > $O/x/sass.csv 2> $O/x/sass.err; echo "source rc $?"
  wc -l $O/x/sass.csv; head -2 $O/x/sass.csv | cut -c1-400
  ncu -i $O/attn.ncu-rep --page details > $O/x/details.txt 2>&1
  grep -iE "Duration|Warp Cycles Per|Stall|No Instruction" $O/x/details.txt | head -20
  gzip $O/x/sass.csv; }
# then_suite MARKER SCRIPT: a two-call plan. The first call runs SCRIPT (bash) and sets MARKER; on an
# H200, the next call on the warm machine (MARKER found) runs the owed suite instead:
# bench/cuda/suite.sh with TYPES "q4_k_m q8_0" at BW 4.6e12.
then_suite() {
  local n; n=$(nvidia-smi --query-gpu=name --format=csv,noheader)
  if [[ "$n" == *H200* && -f $1 ]]; then
    echo "$n: the suite"; BW=4.6e12 TYPES="q4_k_m q8_0" sh bench/cuda/suite.sh
  else
    touch "$1"; bash "$2"
  fi
}
