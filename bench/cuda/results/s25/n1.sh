#!/bin/bash
# For session 26's first call (about 7 device minutes): why the batch-invariant attention (attn_fixed)
# takes 18 us at a decode where the split by length (attn_body) takes 11 (results/s25 d1), and whether
# it is the code's size: at ctx 512 every block takes one 32-slot chunk, so the chunks in flight
# (ATT_KV_DEPTH, 3 by default for a bf16 cache) change nothing but how much code each launch runs
# through. d1v = main built with -DATT_KV_DEPTH=1 (same arithmetic, same bits). ar = main with
# acqrel.patch: the last-block handshakes of the attention and of mq_quant_out as one acq_rel atomic
# (CUTLASS's semaphore) instead of a fence.sc.gpu in every thread before and after. sm = main with
# small.patch built with -DATTF_SMALL: attn_fixed without the paths a chain decode does not take (the
# two-pass tree loop, the by-group partials, the flat merge): the same decode, less code (measurement
# only: wrong for trees and long caches).
# 1. ncu metrics of the decode-step attention launches (past the 1024 prefill launches): instructions
#    executed and stall reasons (no_instruction: instruction fetch), bf16 llama-8b synthetic: main,
#    split by length, d1v, sm, s24's rejected patch v, ar; main, length, sm and d1v with the
#    caches kept (ncu flushes them before each launch by default).
# 2. Q4_K_M cuda-bench alternating: main, d1v, length, d1v length, ar, sm, two rounds.
# 3. -checks kv with ar (the handshake is memory ordering only: a wrong one shows as wrong rows).
. bench/cuda/call.sh; call_init n1
C=carry/n1
unpack $C rigscope-cuda v.cubin d1v.cubin ar.cubin sm.cubin
B=/tmp/rigscope-cuda; D1=RIGSCOPE_CUDA_PTX=/tmp/d1v.cubin; AR=RIGSCOPE_CUDA_PTX=/tmp/ar.cubin; SM=RIGSCOPE_CUDA_PTX=/tmp/sm.cubin; LEN=RIGSCOPE_CUDA_ATTCHUNK=0
q4km_start $B
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,smsp__inst_executed.sum,sm__inst_executed.max,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio
nm() { local tag=$1; shift; el $tag; timeout 45 env "$@" ncu --clock-control none $CCTL --csv -k regex:attn --launch-skip 1024 -c 4 --metrics $M $B cuda-bench --shapes llama-8b --steps 2 > $O/x/m-$tag.csv 2> $O/x/m-$tag.err; echo "rc $?"; python3 bench/cuda/ncu_metrics.py $O/x/m-$tag.csv; }
nm base RIGSCOPE_CUDA_MH=0
if ! grep -q '^"' $O/x/m-base.csv; then  # a metric name this ncu lacks: the sections instead
  tail -3 $O/x/m-base.err
  ns() { local tag=$1; shift; el "sections $tag"; timeout 45 env "$@" ncu --clock-control none -k regex:attn --launch-skip 1024 -c 1 --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight --print-details all $B cuda-bench --shapes llama-8b --steps 2 > $O/x/s-$tag.txt 2>&1; echo "rc $?"; grep -E -i "stall|Executed Instructions|Issued|Elapsed|Duration|Active Cycles" $O/x/s-$tag.txt | head -40; }
  ns base RIGSCOPE_CUDA_MH=0; ns len $LEN; ns d1v $D1
else
  nm len $LEN; nm d1v $D1; nm sm $SM; nm v RIGSCOPE_CUDA_PTX=/tmp/v.cubin; nm ar $AR
  CCTL="--cache-control none"; nm base-warm RIGSCOPE_CUDA_MH=0; nm len-warm $LEN; nm sm-warm $SM; left 200 && nm d1v-warm $D1
fi
snap; q4km_wait
cb() { local tag=$1; shift; timeout 50 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "q4km $tag: $(row $O/x/cb-$tag.txt)"; grep "^attention" $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m"
for r in 1 2; do left 430 || break; cb base$r RIGSCOPE_CUDA_MH=0; cb d1v$r $D1; cb len$r $LEN; cb d1vlen$r $D1 $LEN; cb ar$r $AR; cb sm$r $SM; done
snap; if left 500; then el "checks ar: kv rows (verify rows and slots bitwise decode's)"
  unpack $C cc.test
  timeout 80 env $AR /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv -models /nonexistent > $O/x/kv-ar.txt 2>&1; echo "exit $?"; grep -E "^(f32|bf16) |FAIL|panic" $O/x/kv-ar.txt | head -20; fi
el done
snap; rm -rf $O/x
