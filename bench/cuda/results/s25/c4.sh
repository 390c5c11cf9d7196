#!/bin/bash
# Session 25, call C4: s24's attn-tail.patch (v: attn_fixed's tail block loads its cached slots before
# pdl_wait; the grouped merge loads up to 4 groups at once; RIGSCOPE_CUDA_PTX) against main's kernels:
# checks (kv rows, kernels, gocoder Q8_0 models), cuda-bench bf16 llama-8b and Q4_K_M llama-8b
# alternating, ncu of the attention kernels, then ncu sections of the MH (fp16 mma) products at T=1
# against the dp4a ones.
. bench/cuda/call.sh; call_init c4
C=carry/c4
xz -dc $C/rigscope-cuda.xz > /tmp/rigscope-cuda & p1=$!; xz -dc $C/cc.test.xz > /tmp/cc & p2=$!; xz -dc $C/v.cubin.xz > /tmp/v.cubin & p3=$!
(cd /tmp && xz -dc "$OLDPWD/$C/m.tar.xz" | tar xf -); xz -dc $C/q8.gguf.xz > /tmp/gocoder-14m.Q8_0.gguf; wait $p1 $p2 $p3  # not a bare wait: it waits for the tee too
chmod +x /tmp/rigscope-cuda /tmp/cc; B=/tmp/rigscope-cuda; V=RIGSCOPE_CUDA_PTX=/tmp/v.cubin
mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el "write q4_k_m (background)"; ( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null 2>&1; touch /tmp/q/done ) &
# cc ENV FLAGS...: the check test (ENV first: as run in c4, FLAGS went before the binary and env took -checks for the command)
cc() { timeout ${TO:-120} env "$1" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v "${@:2}"; }
el "checks v: kv rows"; TO=70 cc $V -checks kv -models /nonexistent > $O/x/kv-v.txt 2>&1; echo "exit $?"; grep -E "^(f32|bf16) |FAIL|panic" $O/x/kv-v.txt | head -20
cs() { local tag=$1; shift; timeout 45 env "$@" $B cuda-bench --shapes llama-8b --steps 50 > $O/x/cs-$tag.txt 2>&1; echo "bf16 $tag: $(row $O/x/cs-$tag.txt)"; }
el "cuda-bench bf16 llama-8b"; cs base1 RIGSCOPE_CUDA_MH=0; cs v-1 $V
while [ ! -f /tmp/q/done ]; do sleep 2; done
cb() { local tag=$1; shift; timeout 50 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1; echo "q4km $tag: $(row $O/x/cb-$tag.txt)"; }
el "cuda-bench q4_k_m"; cb base1 RIGSCOPE_CUDA_MH=0; cb v-1 $V; cb base2 RIGSCOPE_CUDA_MH=0; cb v-2 $V
grep -E "^attention" $O/x/cb-base1.txt $O/x/cb-v-1.txt
snap; left 230 && { el "checks v: kernels"; TO=$(( 300 - $(date +%s) + t0 )) cc $V -checks kernels > $O/x/kernels-v.txt 2>&1; echo "exit $?"; grep -E -i "attn|FAIL|panic" $O/x/kernels-v.txt | head -20; tail -3 $O/x/kernels-v.txt; }
snap; left 320 && { el "checks v: gocoder q8_0 models"; TO=60 cc $V -checks quant -parts models -models /tmp > $O/x/models-v.txt 2>&1; echo "exit $?"; grep -E "FAIL|panic|gocoder|verify" $O/x/models-v.txt | head -12; }
left 390 && { cs base2 RIGSCOPE_CUDA_MH=0; cs v-2 $V; cb len1 RIGSCOPE_CUDA_ATTCHUNK=0; }
snap; el "ncu attention"
nc() { local tag=$1; shift; timeout 70 env "$@" ncu --clock-control none --csv -k regex:attn --metrics gpu__time_duration.sum -c 128 $B cuda-bench --model $F --steps 2 > $O/x/ncu-$tag.csv 2> $O/x/ncu-$tag.err; echo "$tag rc $?"; python3 bench/cuda/ncu_sum.py $O/x/ncu-$tag.csv | head -6; }
left 440 && nc base RIGSCOPE_CUDA_MH=0; left 480 && nc v $V
snap; if left 500; then el "ncu MH=16 gate/up and down, sections"; timeout 60 env RIGSCOPE_CUDA_MH=16 ncu --clock-control none -k regex:"mhg_q4k|mhq_q4k|mhq_q6k" --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis -c 3 $B cuda-bench --model $F --steps 2 > $O/x/ncu-mh.txt 2>&1; echo "rc $?"
  grep -E "^  [a-z]|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued|Grid Size|Block Size|Waves" $O/x/ncu-mh.txt | head -80; fi
if left 545; then el "ncu dp4a gate/up, sections"; timeout 45 env RIGSCOPE_CUDA_MH=0 ncu --clock-control none -k regex:"mqg_q4k" --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats -c 1 $B cuda-bench --model $F --steps 2 > $O/x/ncu-dp4a.txt 2>&1; echo "rc $?"
  grep -E "^  [a-z]|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Grid Size|Block Size|Waves" $O/x/ncu-dp4a.txt | head -30; fi
el done
snap; rm -rf $O/x
