#!/bin/bash
# Session 35, call m1: the Q8_K products' one-token twins, again (kernels/quant_mqk1.cu: mqk1_q4k_wW,
# mqkg1_q4k_wW, mqk1_q6k_wW; under RIGSCOPE_CUDA_MQK, RIGSCOPE_CUDA_MQK1=0 turns them off). Session
# 29's twins (s30 p6, rejected: a lane per row, 16 rows a load) are replaced by lanes on consecutive
# units of one row, as the dp4a default's, with the tensor-core kernels' integer sums and float
# chain. (a) `-checks quant -parts mqk`: u0 variants (T=1 rows from the twin) bitwise against T>1
# and within float64 bounds, path1 (the product path with the twins), then the T=1 timing table;
# (b) `-checks quant -parts peer` with MQK=8 (issue 23's numerics: teacher-forced agreement with
# llama.cpp CPU's greedy tokens on the gocoder Q4_K_M and Q6_K files, bench/peer-kquants.sh's,
# carry/m1/peer.tar.xz); (c) `generate` tokens with MQK=8, twins on and off: equal; (d) cuda-bench on
# the synthetic llama-8b as Q4_K_M: default, MQK=8, MQK=16, MQK=8 MQK1=0, alternating, two rounds
# (the row's verify k=4/decode is issue 23's verify of 5).
# Built here (main + this commit's kernels, images regenerated): go test -c -tags 'cuda cubinonly'
# -ldflags='-s -w' -o /tmp/cc.test ./gpu/cuda; go build -tags 'headless cuda cubinonly' -ldflags='-s -w'
# -o /tmp/rigscope-cuda .; both xz'd into carry/m1. Carry ["carry/m1"], after `sh bench/cuda/aside.sh out`.
. bench/cuda/call.sh; call_init m1; unpack carry/m1 cc.test rigscope-cuda; C=/tmp/cc.test; B=/tmp/rigscope-cuda
mkdir -p /tmp/peer && tar xJf carry/m1/peer.tar.xz -C /tmp/peer
q4km_start $B
el mqk; timeout 240 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk > $O/x/mqk.txt 2>&1; echo "mqk rc $?"
grep -E "FAIL|,0 |path1|rror" $O/x/mqk.txt | head -40; grep -E "^Q[46]_K .* 1 " $O/x/mqk.txt | head -12; snap
el peer; for k in 8 0; do RIGSCOPE_CUDA_MQK=$k timeout 120 $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts peer -peer /tmp/peer -models /tmp/peer > $O/x/peer-$k.txt 2>&1; echo "MQK=$k rc $?"; grep -iE "agree|FAIL|rror" $O/x/peer-$k.txt | head -6; done; snap
q4km_wait; el generate
for k in 1 0; do RIGSCOPE_CUDA_MQK=8 RIGSCOPE_CUDA_MQK1=$k timeout 60 $B generate --device cuda --model $F --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > $O/x/g-$k.json 2> /dev/null; done
python3 -c 'import json,sys; t=[json.load(open(f)) for f in sys.argv[1:]]; print("greedy tokens twins on = off:", t[0]["tokens"] == t[1]["tokens"], len(t[0]["tokens"]), [round(x["stats"]["decode_tokens_per_s"],1) for x in t])' $O/x/g-1.json $O/x/g-0.json
el bench; CB_KINDS="gate_up|down|wo|qkv|output"
for r in 1 2; do
  cb def X=1 "--model $F" $r; cb mqk8 RIGSCOPE_CUDA_MQK=8 "--model $F" $r; cb mqk16 RIGSCOPE_CUDA_MQK=16 "--model $F" $r
  cb mqk8-tc "RIGSCOPE_CUDA_MQK=8 RIGSCOPE_CUDA_MQK1=0" "--model $F" $r; snap
done
el done; snap
