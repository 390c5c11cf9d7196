#!/bin/bash
# Session 28, call n9 (on the same warm H200, n7's carry; n8's files still in /tmp/q): the product
# path, `generate --device cuda` as bench/cuda/quant.sh runs it (ctx 512, 128 decode tokens), on the
# synthetic llama-8b as Q4_K_M, Q8_0 and Q4_0, two rounds. No llama.cpp (no device time left for its
# build).
. bench/cuda/call.sh; call_init n9; unpack carry/n7 rigscope-cuda; B=/tmp/rigscope-cuda; mkdir -p /tmp/q; el write
$B write-gguf --model synthetic:llama-8b --type q4_k_m --out /tmp/q/q4.gguf > /dev/null 2>&1; el generate
for r in 1 2; do for f in q4 q8 q40; do [ -f /tmp/q/$f.gguf ] || continue
  timeout 60 $B generate --device cuda --model /tmp/q/$f.gguf --ctx 512 --prompt-ids 1 --max-tokens 129 --ignore-eos --json > $O/x/g-$f-$r.json 2> $O/x/g-$f-$r.err
  echo "$f $r: $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["stats"]["decode_tokens_per_s"],1))' $O/x/g-$f-$r.json)"
done; done
el done; snap; rm -rf $O/x
