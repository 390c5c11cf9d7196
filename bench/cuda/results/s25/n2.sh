#!/bin/bash
# For session 26 (about 5 device minutes): cpa = main with stage.patch built with -DMQ_STAGE: the Q4_K
# GLU's wide one-token kernel (mqg_q4k_1w8, a third of a Q4_K_M decode step) takes each unit's raw
# bytes for its 8 rows global -> shared by cp.async at once, where main loads them row by row into
# registers, sunk by ptxas to each row's use (up to 8 waits for DRAM a unit). Same bytes, same
# arithmetic, same bits. 1. -checks quant -parts kernels with cpa (the wide variants against the
# default kernels, bitwise); 2. Q4_K_M cuda-bench main / cpa alternating, three rounds; 3. ncu of
# the T=1 gate/up launches, main and cpa (duration, DRAM bytes, warp stalls).
. bench/cuda/call.sh; call_init n2
C=carry/n1
unpack $C rigscope-cuda cc.test cpa.cubin
B=/tmp/rigscope-cuda; CPA=RIGSCOPE_CUDA_PTX=/tmp/cpa.cubin
q4km_start $B
el "checks cpa: quant kernels"
timeout 150 env $CPA /tmp/cc.test -test.run TestCUDACheck -test.timeout 0 -test.v -checks quant -parts kernels -models /nonexistent > $O/x/quant-cpa.txt 2>&1; echo "exit $?"
grep -E -i "q4_k|fail|panic|mismatch" $O/x/quant-cpa.txt | head -20; tail -3 $O/x/quant-cpa.txt
snap; q4km_wait
cb() { local tag=$1; shift; timeout 50 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "q4km $tag: $(row $O/x/cb-$tag.txt)"; grep "^gate_up" $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m"
for r in 1 2 3; do left 330 || break; cb base$r RIGSCOPE_CUDA_MH=0; cb cpa$r $CPA; done
snap; el "ncu gate/up at T=1 (ctx 17: one prefill forward first)"
for v in base cpa; do left 420 || break; [ $v = cpa ] && E=$CPA || E=RIGSCOPE_CUDA_MH=0
  timeout 60 env $E ncu --clock-control none --csv -k regex:'^mqg_q4k_1($|[^0-9])' -c 24 --metrics gpu__time_duration.sum,dram__bytes_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread $B cuda-bench --model $F --steps 2 --ctx 17 > $O/x/ncu-$v.csv 2> $O/x/ncu-$v.err; echo "$v rc $?"; python3 bench/cuda/ncu_metrics.py $O/x/ncu-$v.csv | head -12; done
el done
snap; rm -rf $O/x
