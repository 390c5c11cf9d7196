#!/bin/sh
# Session 15, call 3: the final tree (main + headstep, attn dropped): product path, then kv (llama-8b shape, no models) and head8b.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
SPEC=0 ROUNDS=2 sh bench/cuda/product.sh > "$O/product.txt" 2>&1
xz -dc carry/final/cc.test.xz > /tmp/cc && chmod +x /tmp/cc
timeout 60 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks head8b > "$O/head8b.txt" 2>&1
timeout 60 /tmp/cc -test.run TestCUDACheck -test.timeout 0 -test.v -checks kv > "$O/kv.txt" 2>&1; echo "kv exit $?" >> "$O/kv.txt"
cd "$O" && tail -12 product.txt && grep -E "one draft|bitwise|exit" head8b.txt kv.txt | head -20
