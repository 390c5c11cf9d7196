#!/bin/bash
# Session 25, call D2: why the batch-invariant attention (attn_fixed) takes 18 us at a decode where the
# split by length (attn_body) takes 11 (d1, ncu): instructions executed and where warps stall (ncu
# metrics of the decode-step attention launches, past the 1024 prefill launches), bf16 llama-8b
# (synthetic): the default, the split by length, s24's attn-tail patch (v), ATTGROUP=1.
O=${OUT:-/tmp/out}; mkdir -p $O/x; exec > >(tee $O/d2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
nvidia-smi --query-gpu=name --format=csv,noheader
C=carry/d2
xz -dc $C/rigscope-cuda.xz > /tmp/rigscope-cuda & p1=$!; xz -dc $C/v.cubin.xz > /tmp/v.cubin & p2=$!; wait $p1 $p2
chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,smsp__inst_executed.sum,sm__inst_executed.max,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio
nm() { local tag=$1; shift; el $tag; timeout 45 env "$@" ncu --clock-control none $CC --csv -k regex:attn --launch-skip 1024 -c 4 --metrics $M $B cuda-bench --shapes llama-8b --steps 2 > $O/x/m-$tag.csv 2> $O/x/m-$tag.err; echo "rc $?"; python3 $C/met.py $O/x/m-$tag.csv; }
nm base RIGSCOPE_CUDA_MH=0
if ! grep -q '^"' $O/x/m-base.csv; then  # a metric name this ncu lacks: the sections instead
  cat $O/x/m-base.err | tail -3
  ns() { local tag=$1; shift; el "sections $tag"; timeout 45 env "$@" ncu --clock-control none -k regex:attn --launch-skip 1024 -c 1 --section WarpStateStats --section InstructionStats --section SchedulerStats --section SpeedOfLight --print-details all $B cuda-bench --shapes llama-8b --steps 2 > $O/x/s-$tag.txt 2>&1; echo "rc $?"; grep -E -i "stall|Executed Instructions|Issued|Elapsed|Duration|Active Cycles" $O/x/s-$tag.txt | head -40; }
  ns base RIGSCOPE_CUDA_MH=0; ns len RIGSCOPE_CUDA_ATTCHUNK=0; left 100 && ns v RIGSCOPE_CUDA_PTX=/tmp/v.cubin
  el done; (cd $O && tar czf x.tgz x); exit 0
fi
nm len RIGSCOPE_CUDA_ATTCHUNK=0
left 100 && nm v RIGSCOPE_CUDA_PTX=/tmp/v.cubin; left 120 && nm group1 RIGSCOPE_CUDA_ATTGROUP=1
# ncu flushes the caches before each profiled launch by default (instructions too); in a graph the
# attention finds its code and the step's inputs in L2: the same metrics with the caches kept.
CC="--cache-control none"; left 150 && nm base-warm RIGSCOPE_CUDA_MH=0; left 170 && nm len-warm RIGSCOPE_CUDA_ATTCHUNK=0
el done
(cd $O && tar czf x.tgz x); rm -rf $O/x
