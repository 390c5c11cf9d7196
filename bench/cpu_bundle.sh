#!/usr/bin/env bash
# Builds carry/cpubench/ for bench/cpu_device.sh: the rigscope binary, the
# shared libraries it links (the device machine has no X/GL), the llama.cpp
# peer (run ../shared/peers/llamacpp/setup.sh first) and the gocoder files.
set -eu
cd "$(dirname "$0")/.."
D=carry/cpubench
PEER=${PEER:-/tmp/rigscope-peer}
L=$PEER/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p $D/lib $D/peer $D/models
go build -tags headless -ldflags="-s -w" -o $D/rigscope .
for l in $(ldd $D/rigscope | awk '/=>/ {print $3}' | grep -v -E 'libc.so|libm.so|ld-linux'); do cp -L "$l" $D/lib/; done
cp $PEER/cbench $D/peer/
cp $L/libggml-base.so $L/libggml.v0.4.0.so $L/libllama.v0.4.0.so $L/libggml-cpu-*.so $D/peer/
cp ../shared/models/gocoder-14m.Q8_0.gguf ../shared/models/gocoder-draft-1m.F16.gguf $D/models/
du -sh $D
