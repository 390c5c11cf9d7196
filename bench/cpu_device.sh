#!/usr/bin/env bash
# Runs `rigscope bench-cpu` on a quiet machine (the lent device machine; no Go
# there) from a bundle in carry/cpubench/ that bench/cpu_bundle.sh makes:
# the rigscope binary and the X/GL libraries it links, the llama.cpp peer
# (cbench + its prebuilt libraries) and the gocoder GGUF files. Both engines
# are pinned to the same CPUs (taskset) so the thread counts mean the same.
#   bench/cpu_device.sh [CPUS=0,1] [extra bench-cpu flags...]
set -eu
B=$(cd "$(dirname "$0")/../carry/cpubench" && pwd)
CPUS=${1:-0,1}
shift || true
export LD_LIBRARY_PATH=$B/lib:$B/peer
exec taskset -c "$CPUS" "$B/rigscope" bench-cpu --peer "$B/peer/cbench" --peer-bins "$B/peer" \
	--models "$B/models/gocoder-14m.Q8_0.gguf,$B/models/gocoder-draft-1m.F16.gguf" "$@"
