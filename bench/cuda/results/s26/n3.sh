#!/bin/bash
# Session 26, one call (about 6 device minutes): main with acqrel.patch landed (kernels/*.gz
# regenerated: the last-block handshakes of the attention and of mq_quant_out as one acq_rel atomic).
# 1. -checks kernels,kv,quant with the new images (no models: the handshake is memory ordering, a
#    wrong one shows as wrong rows or values). 2. Q4_K_M and bf16 cuda-bench, new against the old
#    image (RIGSCOPE_CUDA_PTX=old.cubin), alternating. 3. Why the batch-invariant attention is slower
#    than the split by length at the same grid: ncu metrics (n1's, whose first run profiled gcc: the
#    device sets CC, which n1 used for ncu's cache option) and per-SASS-instruction stall samples
#    (SourceCounters, the source page as CSV) of one decode-step attention launch, fixed and length.
. bench/cuda/call.sh; call_init n3
C=carry/n3
unpack $C rigscope-cuda cc.test old.cubin
B=/tmp/rigscope-cuda; OLD=RIGSCOPE_CUDA_PTX=/tmp/old.cubin; LEN=RIGSCOPE_CUDA_ATTCHUNK=0
q4km_start $B
el "checks (new images): kernels, kv, quant"
timeout 200 /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks kernels,kv,quant -models /nonexistent > $O/x/checks.txt 2>&1; echo "exit $?"
grep -c " ok" $O/x/checks.txt; grep -E -i "fail|panic|mismatch|differ [1-9]" $O/x/checks.txt | head -20; grep -E "^(f32|bf16) " $O/x/checks.txt | head -14; tail -3 $O/x/checks.txt
snap
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,smsp__inst_executed.sum,sm__inst_executed.max,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
nm() { local tag=$1; shift; el "metrics $tag"; timeout 45 env "$@" ncu --clock-control none --csv -k regex:attn --launch-skip 1024 -c 4 --metrics $M $B cuda-bench --shapes llama-8b --steps 2 > $O/x/m-$tag.csv 2> $O/x/m-$tag.err; echo "rc $?"; python3 bench/cuda/ncu_metrics.py $O/x/m-$tag.csv; }
nm fixed RIGSCOPE_CUDA_MH=0; nm len $LEN; nm group1 RIGSCOPE_CUDA_ATTGROUP=1
src() { local tag=$1; shift; el "source $tag"
  timeout 60 env "$@" ncu --clock-control none -k regex:attn --launch-skip 1024 -c 1 --section SourceCounters --section WarpStateStats -f -o /tmp/src-$tag $B cuda-bench --shapes llama-8b --steps 2 > $O/x/src-$tag.log 2>&1; echo "rc $?"
  ncu -i /tmp/src-$tag.ncu-rep --page source --csv --print-source sass > $O/x/sass-$tag.csv 2> $O/x/sass-$tag.err || ncu -i /tmp/src-$tag.ncu-rep --page source --csv > $O/x/sass-$tag.csv 2>> $O/x/sass-$tag.err
  echo "sass rows $(wc -l < $O/x/sass-$tag.csv)"; head -c 600 $O/x/sass-$tag.csv; echo; tail -2 $O/x/sass-$tag.err
  ncu -i /tmp/src-$tag.ncu-rep --page details --print-details all > $O/x/det-$tag.txt 2>&1; grep -A12 -i "Source Counters" $O/x/det-$tag.txt | head -30; }
src fixed RIGSCOPE_CUDA_MH=0; src len $LEN
snap; q4km_wait
cb() { local tag=$1 f=$2; shift 2; timeout 60 env "$@" $B cuda-bench $f --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^(attention|gate_up|down|wo|qkv) " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: new / old"
for r in 1 2; do left 480 || break; cb q4new$r "--model $F" RIGSCOPE_CUDA_MH=0; cb q4old$r "--model $F" $OLD; done
el "cuda-bench bf16: new / old"
left 530 && { cb bfnew "--shapes llama-8b" RIGSCOPE_CUDA_MH=0; cb bfold "--shapes llama-8b" $OLD; }
el done
snap; rm -rf $O/x
