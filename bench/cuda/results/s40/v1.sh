#!/bin/bash
# Session 40, call v1. Two kernel questions in one call, each against main's embedded image in the
# same process family, alternating:
# (1) s39's n8: seq2.cubin (results/s39/seq2.patch: the sequential Q4_K GLU with its header shared
#     by shuffles) under q4glu8s and q4glu4s, the bandwidth table with -bwtall=4.
# (2) tx.cubin and txb.cubin (results/s40/tx.patch): the products of T > 1 tokens (quant_mv.cu
#     mq_body, fp8_mv.cu) load every token's activation unguarded (MQ_TX: tokens past T load
#     T-1's, whose sums are never stored), so ptxas may issue them together instead of one L1
#     round trip a token; txb adds BOTTOM loading at T > 1 for every product (MQ_TB=2); txg
#     (MQ_TX=2, quant_mv.cu only) loads every token's activation before the arithmetic, which
#     stays guarded (no work for tokens past T). Same
#     arithmetic per stored token, so the same bits. Bandwidth table Q4_K, Q6_K, Q8_0 (T=5 rows),
#     then for the better: -checks quant,fp8 -parts kernels, `generate` md5, cuda-bench Q4_K_M
#     (verify k=4 / decode) and FP8 against main, two rounds.
# carry/v1: cc.test.xz (main with seq2.patch's Go part: its mqwEntries; main's embedded image),
# seq2.cubin.xz, tx.cubin.xz, txb.cubin.xz, txg.cubin.xz; carry/rigscope-cuda.gz is main's default binary (the
# suite's). Run through go.sh.
. bench/cuda/call.sh; call_init v1
unpack carry/v1 cc.test seq2.cubin tx.cubin txb.cubin txg.cubin; chmod -x /tmp/*.cubin
gunzip -c carry/rigscope-cuda.gz > /tmp/rigscope-cuda && chmod +x /tmp/rigscope-cuda
C=/tmp/cc.test; B=/tmp/rigscope-cuda
q4km_start $B
# (1)
P=RIGSCOPE_CUDA_PTX=/tmp/seq2.cubin; REST=q4add32,q80add32,q40glu8,q40add16
W8="$P RIGSCOPE_CUDA_MQW=q4glu8s,$REST"; W4="$P RIGSCOPE_CUDA_MQW=q4glu4s,$REST"
T="-bwtypes=Q4_K -bwtall=4"
bw main X=1 $T; bw w8s "$W8" $T; bw w4s "$W4" $T; bw main2 X=1 $T; snap
# (2) t5 NAME: the T=5 rows with PDL of the five layer products, summed per type
t5() { awk '/ T=5 .*pdl/ && $3 !~ /^x[0-9]/ {match($0, /[0-9.]+ us pdl/); s[$1]+=substr($0, RSTART, RLENGTH-7)} END {for (k in s) printf "%s %.1f  ", k, s[k]; print ""}' $O/x/bw-$1.txt; }
TT="-bwtypes=Q4_K,Q6_K,Q8_0"
bw tmain X=1 $TT; for n in tx txb txg; do bw $n RIGSCOPE_CUDA_PTX=/tmp/$n.cubin $TT; done; bw tmain2 X=1 $TT; snap
for n in tmain tx txb txg tmain2; do echo "T=5 sums $n: $(t5 $n)"; done
q4() { awk '/ T=5 .*pdl/ && $1 == "Q4_K" && $3 !~ /^x[0-9]/ {match($0, /[0-9.]+ us pdl/); s+=substr($0, RSTART, RLENGTH-7)} END {print s}' $O/x/bw-$1.txt; }
N=$(for n in tx txb txg; do echo "$(q4 $n) $n"; done | sort -n | head -1 | cut -d' ' -f2); echo "best: $N"
E="RIGSCOPE_CUDA_PTX=/tmp/$N.cubin"
el "checks $N"; timeout 170 env $E $C -test.run TestCUDACheck -test.timeout 0 -checks quant,fp8 -parts kernels > $O/x/chk-$N.txt 2>&1; echo "rc $?"
grep -cE " ok" $O/x/chk-$N.txt; grep -E "FAIL|rror" $O/x/chk-$N.txt | head -10; snap
q4km_wait; el generate; gen main X=1; gen $N "$E"; snap
CB_KINDS="gate_up|down|qkv|wo|output"
for r in 1 2; do left 520 || break; el "bench round $r"; cb main X=1 "--model $F" $r; cb $N "$E" "--model $F" $r; snap; done
for r in 1 2; do left 540 || break; el "fp8 round $r"; cb f8main X=1 "--dtype f8_e4m3 --shapes llama-8b" $r; cb f8$N "$E" "--dtype f8_e4m3 --shapes llama-8b" $r; snap; done

# Left from session 38: s38's devHelper.upQuant (a9960c3) in the mqk, mh and mma checks (main's image).
if left 500; then el "checks mqk,mh,mma"; timeout $(( 590 - $(date +%s) + t0 )) $C -test.run TestCUDACheck -test.timeout 0 -checks quant -parts mqk,mh,mma > $O/x/chk-mqk.txt 2>&1; echo "rc $?"
  grep -cE " ok" $O/x/chk-mqk.txt; grep -E "FAIL|rror" $O/x/chk-mqk.txt | head -10; fi
el end; snap
