#!/bin/sh
# Session 15, call 2: the product path (generate --device cuda) against cuda-bench, merged tree.
set -u
O=${OUT:-/tmp/out}; mkdir -p "$O"
SPEC=0 ROUNDS=2 sh bench/cuda/product.sh > "$O/product.txt" 2>&1
cd "$O" && tail -20 product.txt
