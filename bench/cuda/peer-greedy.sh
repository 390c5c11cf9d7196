#!/bin/bash
# llama.cpp's greedy tokens on the GPU: bench/peer/greedy.cpp built with CUDA (sm_90, static) from
# the source ../shared/peers/llamacpp-cuda carries, with the flags of its build.sh (about 280 s on
# the GPU machine's 16 cores), into $PREFIX/greedy (default /tmp/llamacpp-cuda). Then
# `GREEDY_NGL=99 $PREFIX/greedy MODEL 32 [FORCED] < prompts.txt` runs every layer on the GPU, as
# bench/peer-kquants.sh runs the CPU peer (prompts.txt and the k-quant files are that script's).
# On the GPU machine, the llamacpp-cuda folder carried: bash bench/cuda/peer-greedy.sh carry/llamacpp-cuda
set -eu
SRC=$(cd "$1" && pwd); PREFIX=${PREFIX:-/tmp/llamacpp-cuda}; S=/tmp/llamacpp-src
G=$(cd "$(dirname "$0")/../peer" && pwd)/greedy.cpp
mkdir -p $S $PREFIX; [ -f $S/CMakeLists.txt ] || tar -C $S -xJf "$SRC/llama-src.tar.xz"
grep -q rs-greedy $S/CMakeLists.txt || printf '\nadd_executable(rs-greedy %s)\ntarget_link_libraries(rs-greedy PRIVATE llama)\n' "$G" >> $S/CMakeLists.txt
cmake -S $S -B $S/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF > $PREFIX/greedy-cmake.log 2>&1
cmake --build $S/build --target rs-greedy -j "$(nproc)" > $PREFIX/greedy-build.log 2>&1
cp "$(find $S/build -name rs-greedy -type f | head -1)" $PREFIX/greedy
echo "built $PREFIX/greedy"
