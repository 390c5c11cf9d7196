#!/bin/bash
# Session 26, second call (about 5 device minutes): n3's per-instruction stall samples put the fixed
# attention's extra time at branch targets past code a decode does not run (the unrolled subchunk
# copies 2 and 3, the two-pass tree loop, the by-group partials): single cheap instructions with
# dozens of samples each, instruction fetch; the merge, run by one block at the far end of the
# code, holds three times the samples of the split by length's. e2 = main with the grouped merge's
# loop over groups not unrolled (attn_128_1_kb 8,701 instructions against 9,348; marking the rare
# paths __builtin_expect(..., 0) left the SASS as it was, so that variant is not run). Same
# arithmetic, same bits. 1. -checks kv with e2; 2. ncu metrics of the decode-step attention
# (bf16 llama-8b), base and e2; 3. Q4_K_M cuda-bench base / e2 alternating, two rounds (the
# session had about 3 device minutes left for the run).
. bench/cuda/call.sh; call_init n4
C=carry/n4
unpack $C rigscope-cuda cc.test e2.cubin
B=/tmp/rigscope-cuda; E2=RIGSCOPE_CUDA_PTX=/tmp/e2.cubin
q4km_start $B
cc() { local tag=$1 ch=$2; shift 2; timeout 90 env "$@" /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks $ch -models /nonexistent > $O/x/$ch-$tag.txt 2>&1; echo "$ch $tag exit $?"; grep -E "^(f32|bf16) |FAIL|panic" $O/x/$ch-$tag.txt | head -14; }
el "checks kv"; cc e2 kv $E2
snap
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,smsp__inst_executed.sum,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
nm() { local tag=$1; shift; el "metrics $tag"; timeout 45 env "$@" ncu --clock-control none --csv -k regex:attn --launch-skip 1024 -c 4 --metrics $M $B cuda-bench --shapes llama-8b --steps 2 > $O/x/m-$tag.csv 2> $O/x/m-$tag.err; echo "rc $?"; python3 bench/cuda/ncu_metrics.py $O/x/m-$tag.csv; }
nm base RIGSCOPE_CUDA_MH=0; nm e2 $E2
snap; q4km_wait
cb() { local tag=$1; shift; timeout 40 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "$tag: $(row $O/x/cb-$tag.txt)"; grep -E "^attention " $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m: base / e2"
for r in 1 2; do left 150 || break; cb base$r RIGSCOPE_CUDA_MH=0; cb e2$r $E2; done
el done
snap; rm -rf $O/x
