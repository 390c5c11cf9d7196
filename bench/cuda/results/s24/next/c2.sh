#!/bin/bash
# Session 24, call C2: attn_fixed (v1: kernels/attention.cu, attn_fixed.cu)'s tail block loads its cached slots before pdl_wait (v1 cubin,
# RIGSCOPE_CUDA_PTX; v2: v1 and the grouped merge's loads of up to 4 groups at once) against main's kernels: checks (kernels, kv rows, gocoder Q8_0 models),
# Q4_K_M llama-8b cuda-bench alternating, and ncu of the attention kernels (base, v1, len split).
O=${OUT:-/tmp/out}; mkdir -p $O/x; exec > >(tee $O/c2.txt) 2>&1
t0=$(date +%s); el() { echo "## $1 (at $(( $(date +%s) - t0 )) s)"; }
left() { [ $(( $(date +%s) - t0 )) -lt $1 ]; }
snap() { (cd $O && tar czf x.tgz x); }  # the outputs so far (more than 8 files do not come back)
nvidia-smi --query-gpu=name --format=csv,noheader
C=carry/c2
xz -dc $C/rigscope-cuda.xz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda; B=/tmp/rigscope-cuda
xz -dc $C/cc.test.xz > /tmp/cc && chmod +x /tmp/cc; xz -dc $C/v1.cubin.xz > /tmp/v1.cubin; xz -dc $C/v2.cubin.xz > /tmp/v2.cubin
(cd /tmp && xz -dc "$OLDPWD/$C/m.tar.xz" | tar xf -); xz -dc $C/q8.gguf.xz > /tmp/gocoder-14m.Q8_0.gguf
V=RIGSCOPE_CUDA_PTX=/tmp/v1.cubin; V2=RIGSCOPE_CUDA_PTX=/tmp/v2.cubin
mkdir -p /tmp/q; F=/tmp/q/llama-8b.q4_k_m.gguf
el "write q4_k_m (background)"; ( $B write-gguf --model synthetic:llama-8b --type q4_k_m --out $F > /dev/null 2>&1; touch /tmp/q/done ) &
cc() { timeout ${TO:-120} env "$@" /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v; }
el "checks v2: kv rows"; TO=70 cc $V2 -checks kv -models /nonexistent > $O/x/kv-v2.txt 2>&1; echo "exit $?"; grep -E "^(f32|bf16) |FAIL|panic" $O/x/kv-v2.txt | head -20
while [ ! -f /tmp/q/done ]; do sleep 2; done
cb() { local tag=$1; shift; timeout 50 env "$@" $B cuda-bench --model $F --steps 50 > $O/x/cb-$tag.txt 2>&1
  echo "$tag: $(grep -A1 '^shape' $O/x/cb-$tag.txt | tail -1 | awk '{print "tok/s", $6, "verify/decode", $8, "us/step", $NF-0, $(NF-1)}')"; }
el "cuda-bench"; cb base1 RIGSCOPE_CUDA_MH=0; cb v2-1 $V2; cb base2 RIGSCOPE_CUDA_MH=0; cb v2-2 $V2
grep -E "^attention" $O/x/cb-base1.txt $O/x/cb-v2-1.txt
snap; left 190 && { el "checks v2: kernels"; TO=$(( 250 - $(date +%s) + t0 )) cc $V2 -checks kernels > $O/x/kernels-v2.txt 2>&1; echo "exit $?"; grep -E -i "attn|FAIL|panic" $O/x/kernels-v2.txt | head -20; tail -3 $O/x/kernels-v2.txt; }
snap; left 250 && cb v1-1 $V
left 260 && cb len1 RIGSCOPE_CUDA_ATTCHUNK=0
left 275 && { el "checks v2: gocoder q8_0 models"; TO=60 cc $V2 -checks quant -parts models -models /tmp > $O/x/models-v2.txt 2>&1; echo "exit $?"; grep -E "FAIL|panic|gocoder|verify" $O/x/models-v2.txt | head -12; }
snap; el "ncu attention"
nc() { local tag=$1; shift; timeout 100 env "$@" ncu --clock-control none --csv -k regex:attn --metrics gpu__time_duration.sum -c 128 $B cuda-bench --model $F --steps 2 > $O/x/ncu-$tag.csv 2> $O/x/ncu-$tag.err; echo "$tag rc $?"; python3 bench/cuda/ncu_sum.py $O/x/ncu-$tag.csv | head -6; }
for t in base v2 len; do left 380 || break
  case $t in base) nc base RIGSCOPE_CUDA_MH=0;; v1) nc v1 $V;; v2) nc v2 $V2;; len) nc len RIGSCOPE_CUDA_ATTCHUNK=0;; esac; done
snap; if left 420; then el "ncu all kernels, v2"; timeout 90 env $V2 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum -c 450 $B cuda-bench --model $F --steps 2 > $O/x/ncu-all.csv 2> $O/x/ncu-all.err; echo "rc $?"; python3 bench/cuda/ncu_sum.py $O/x/ncu-all.csv | head -30; fi
snap; if left 460; then el "ncu MH=16 gate/up and down, sections"; timeout 100 env RIGSCOPE_CUDA_MH=16 ncu --clock-control none -k regex:"mhg_q4k|mhq_q4k|mhq_q6k" --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats -c 3 $B cuda-bench --model $F --steps 2 > $O/x/ncu-mh.txt 2>&1; echo "rc $?"
  grep -E "^  [a-z]|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Stall|Warp Cycles Per Issued|Grid Size|Block Size|Waves" $O/x/ncu-mh.txt | head -80; fi
if left 480; then el "ncu dp4a gate/up, sections"; timeout 80 env RIGSCOPE_CUDA_MH=0 ncu --clock-control none -k regex:"mqg_q4k" --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats -c 1 $B cuda-bench --model $F --steps 2 > $O/x/ncu-dp4a.txt 2>&1; echo "rc $?"
  grep -E "^  [a-z]|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Stall|Warp Cycles Per Issued|Grid Size|Block Size|Waves" $O/x/ncu-dp4a.txt | head -30; fi
el done
snap; rm -rf $O/x
