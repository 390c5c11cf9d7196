#!/bin/bash
# Session 29, call p2: llama.cpp CUDA as the GPU peer of issue 23's numerics target. bench/peer/greedy.cpp
# built with CUDA (bench/cuda/peer-greedy.sh); on the gocoder Q4_K_M and Q6_K files (bench/peer-kquants.sh's,
# carry/p2/peer.tar.xz): (a) llama.cpp CUDA teacher-forced on llama.cpp CPU's greedy tokens (its agreement
# with its own CPU path, measured as the quant check's peer part measures rigscope's GPU); (b) its own greedy
# tokens; (c) `-checks quant -parts peer` against those CUDA tokens, default and RIGSCOPE_CUDA_MQK=8.
# Then (d) `-checks quant -parts mma,mqk` with this session's shared tile finish and super-block loop
# (kernels/quant_mma.cu mq_tile_finish, quant_mqk.cu mqk_loop; images regenerated); (e) what the
# attention costs inside the graphed step: cuda-bench on the bf16 llama-8b shape with
# RIGSCOPE_CUDA_SKIP=attention (garbage tokens, the step without its attention) against the default,
# alternating, two rounds.
# Built here: go test -c -tags 'cuda cubinonly' -ldflags='-s -w' -o carry/p2/cc.test ./gpu/cuda,
# go build -tags 'headless cuda cubinonly' -ldflags='-s -w' -o carry/p2/rigscope-cuda . (both xz);
# ../shared/peers/llamacpp-cuda copied to carry/p2/llamacpp-cuda.
. bench/cuda/call.sh; call_init p2; unpack carry/p2 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/peer /tmp/pc /tmp/m && tar xJf carry/p2/peer.tar.xz -C /tmp/peer && tar xJf carry/p2/m.tar.xz -C /tmp/m
el "mma,mqk (while llama.cpp builds)"
( timeout 300 $C -test.run TestCUDACheck -checks quant -parts mma,mqk -models /tmp/m > $O/x/mma-mqk.txt 2>&1; echo "mma,mqk rc $?" > $O/x/mma-mqk.rc ) & pc=$!
el "build greedy"
bash bench/cuda/peer-greedy.sh carry/p2/llamacpp-cuda || tail -20 /tmp/llamacpp-cuda/greedy-build.log
wait $pc; cat $O/x/mma-mqk.rc; grep -E "FAIL|fail|exceed" $O/x/mma-mqk.txt | head; tail -3 $O/x/mma-mqk.txt
G=/tmp/llamacpp-cuda/greedy; agree() { python3 -c '
import sys
a=[l.split() for l in open(sys.argv[1])]; b=[l.split() for l in open(sys.argv[2])]
n=sum(len(x) for x in a); s=sum(x==y for p,q in zip(a,b) for x,y in zip(p,q)); f=sum(p==q for p,q in zip(a,b))
print(f"{s}/{n} = {s/n:.4f}; {f} of {len(a)} prompts agree at every step")' $1 $2; }
el peer
for q in Q4_K_M Q6_K; do
  f=/tmp/peer/gocoder-14m.$q.gguf; ln -sf $f /tmp/pc/
  GREEDY_NGL=99 $G $f 32 /tmp/peer/llama-$q.txt < /tmp/peer/prompts.txt > $O/x/cuda-tf-$q.txt
  echo "$q llama.cpp CUDA teacher-forced on llama.cpp CPU's tokens: $(agree $O/x/cuda-tf-$q.txt /tmp/peer/llama-$q.txt)"
  GREEDY_NGL=99 $G $f 32 < /tmp/peer/prompts.txt > /tmp/pc/llama-$q.txt; cp /tmp/pc/llama-$q.txt $O/x/llama-cuda-$q.txt
  echo "$q llama.cpp CUDA free greedy = CPU's: $(agree /tmp/pc/llama-$q.txt /tmp/peer/llama-$q.txt)"
done
for k in 0 8; do
  RIGSCOPE_CUDA_MQK=$k timeout 120 $C -test.run TestCUDACheck -checks quant -parts peer -peer /tmp/pc -models /tmp/m > $O/x/peer-cuda-mqk$k.txt 2>&1
  echo "rigscope GPU against llama.cpp CUDA's tokens, MQK=$k rc $?"; grep -E "agreement" $O/x/peer-cuda-mqk$k.txt
done
el "attention in the graph"
for r in 1 2; do for sk in none attention; do
  RIGSCOPE_CUDA_SKIP=$sk timeout 90 $B cuda-bench --shapes llama-8b --steps 50 > $O/x/cb-skip-$sk-$r.txt 2>&1; echo "SKIP=$sk round $r: $(row $O/x/cb-skip-$sk-$r.txt)"
done; done
el done; snap; rm -rf $O/x
