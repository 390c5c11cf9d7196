#!/bin/sh
# ncclrun probe (issue 20): NCCL settings per run on the one H200, and the
# run logs of real TP runs for the dashboard replay.
#  1. cc -checks nccl (NCCL_DEBUG=INFO, INIT,ENV): communicators through the
#     step's path (ncclCommInitRankConfig, env around it, probe allreduce)
#     with each kind of setting, one rank (one GPU): made again only when
#     the settings change; NCCL's log must show the channels asked for
#     ("N coll channels") and NCCL_BUFFSIZE=8388608; a second buffer size
#     refused; NCCL's own refusals with its message; TP 2 nccl through the
#     engine refused (two ranks on one GPU).
#  2. cc -checks runlog: engine runs at TP 1, TP 2 x oneshot/twoshot/host/auto
#     and TP 4 oneshot (gocoder-14m-hf, n-gram k=4, 256 tokens), run logs
#     into $OUT/ncclrun/runs (returned as runs.tgz) for
#     `rigscope --replay LOG --tab dashboard` here.
# Carry: carry/ncclrun/cc.test.xz; models: carry/m/gocoder-14m-hf.
set -u
O="${OUT:-/tmp/out}/ncclrun"
mkdir -p "$O/runs"
xz -dc carry/ncclrun/cc.test.xz > /tmp/cc-ncclrun && chmod +x /tmp/cc-ncclrun
M="$(pwd)/carry/m"
export RIGSCOPE_CACHE_DIR=/tmp/rigscope-cache-ncclrun
(cd /tmp && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV timeout 60 /tmp/cc-ncclrun -test.run TestCUDACheck -test.timeout 0 -test.v \
	-checks nccl -models "$M") > "$O/nccl-full.txt" 2>&1
echo "nccl check rc $?" >> "$O/nccl-full.txt"
# The check's own lines, and NCCL's lines about channels and the buffer size.
grep -v "NCCL INFO" "$O/nccl-full.txt" > "$O/nccl.txt"
grep -E "coll channels|NCCL_BUFFSIZE|NCCL_PROTO|NCCL_ALGO|WARN|version" "$O/nccl-full.txt" | sed 's/^[^ ]* [0-9]*:[0-9]* \[[0-9]*\] //' | head -80 > "$O/nccl-log.txt"
(cd /tmp && timeout 70 /tmp/cc-ncclrun -test.run TestCUDACheck -test.timeout 0 -test.v \
	-checks runlog -models "$M" -runlogs "$O/runs") > "$O/runlog.txt" 2>&1
echo "runlog check rc $?" >> "$O/runlog.txt"
(cd "$O" && tar czf runs.tgz runs && rm -rf runs)
gzip -9 -f "$O/nccl-full.txt"
echo "# nccl check"; tail -40 "$O/nccl.txt"
echo "# NCCL's log (channels, buffer size)"; grep -E "coll channels|BUFFSIZE" "$O/nccl-log.txt" | head -20
echo "# runlog check"; tail -14 "$O/runlog.txt"
ls -la "$O"
