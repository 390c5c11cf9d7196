#!/bin/bash
# Session 25, call D1: where the batch-invariant attention's 4 us a layer go (Q4_K_M llama-8b
# cuda-bench: default, ATTGROUP=1, split by length; ncu of the decode-step attention kernels, past
# the 32 prefill forwards), and the MH (fp16 mma) products at T=1 against the dp4a ones (ncu sections
# of the first decode-step launches).
. bench/cuda/call.sh; call_init d1
C=carry/d1
xz -dc $C/rigscope-cuda.xz > /tmp/rigscope-cuda; chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el "write q4_k_m"; $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null 2>&1
cb() { local tag=$1; shift; timeout 50 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "q4km $tag: $(row $O/x/cb-$tag.txt)"; grep "^attention" $O/x/cb-$tag.txt; }
el "cuda-bench q4_k_m"; cb base RIGSCOPE_CUDA_MH=0; cb group1 RIGSCOPE_CUDA_ATTGROUP=1; cb len RIGSCOPE_CUDA_ATTCHUNK=0
snap; el "ncu attention, decode steps (skip the 1024 prefill launches)"
nc() { local tag=$1; shift; timeout 60 env "$@" ncu --clock-control none --csv -k regex:attn --launch-skip 1024 -c 96 --metrics gpu__time_duration.sum,dram__bytes_read.sum $B cuda-bench --model $F --steps 2 > $O/x/ncu-$tag.csv 2> $O/x/ncu-$tag.err; echo "$tag rc $?"; python3 bench/cuda/ncu_sum.py $O/x/ncu-$tag.csv | head -6; }
nc base RIGSCOPE_CUDA_MH=0; nc group1 RIGSCOPE_CUDA_ATTGROUP=1; nc len RIGSCOPE_CUDA_ATTCHUNK=0
snap; SEC="--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis"
# ns TAG REGEX CTX SKIP ENV...: ncu sections of launch SKIP+1 of the kernels REGEX matches (cuda-bench --ctx CTX:
# ctx 17 fills the cache with one 16-token forward, so few prefill launches come first)
ns() { local tag=$1 k=$2 cx=$3 sk=$4; shift 4; timeout 60 env "$@" ncu --clock-control none -k regex:"$k" --launch-skip $sk -c 1 $SEC $B cuda-bench --model $F --steps 2 --ctx $cx > $O/x/ns-$tag.txt 2>&1; echo "$tag rc $?"
  grep -E "^  [a-z]|Duration|DRAM Throughput|L2 Hit Rate|SM Active Cycles|Elapsed Cycles|Achieved Occupancy|Theoretical Occupancy|Registers Per|Warp Cycles Per Issued|Grid Size|Block Size|Waves|stalled|spends" $O/x/ns-$tag.txt | head -24; }
left 200 && { el "ncu sections, attention decode"; ns attn-base attn 512 1024 RIGSCOPE_CUDA_MH=0; ns attn-len attn 512 1024 RIGSCOPE_CUDA_ATTCHUNK=0; }
snap; left 230 && { el "ncu sections, products at T=1"; ns mqg '^mqg_q4k_1($|[^0-9])' 17 0 RIGSCOPE_CUDA_MH=0; ns mhg mhg_q4k 17 64 RIGSCOPE_CUDA_MH=16; ns mhq mhq_q4k 17 200 RIGSCOPE_CUDA_MH=16; ns mhx '^mh_x' 17 200 RIGSCOPE_CUDA_MH=16; }
snap; left 280 && { el "ncu timing, every kernel at ctx 17, MH=16 and dp4a"
  for m in 16 0; do timeout 50 env RIGSCOPE_CUDA_MH=$m ncu --clock-control none --csv --launch-skip 600 -c 600 --metrics gpu__time_duration.sum,dram__bytes_read.sum $B cuda-bench --model $F --steps 2 --ctx 17 > $O/x/ncu-all$m.csv 2> $O/x/ncu-all$m.err; echo "MH=$m rc $?"; python3 bench/cuda/ncu_sum.py $O/x/ncu-all$m.csv | head -16; done; }
el done
snap; rm -rf $O/x
