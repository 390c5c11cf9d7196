#!/bin/sh
# Before a device call whose carry is large: `sh bench/cuda/aside.sh out` moves what a call's
# scripts do not read (the embedded kernel images, the older results folders, the Go sources)
# to /tmp/rigscope-aside, so the tree the call copies stays small (the 64 MiB limit appears to count disk
# blocks: about 1,800 small files take 6 MiB); `sh bench/cuda/aside.sh in` puts them back.
# bench/cuda/call.sh, results/$KEEP (default: the newest results folder) and carry/ stay: to run
# older sessions' scripts, name their folders (`KEEP="s34 s41" sh bench/cuda/aside.sh out`).
set -eu
cd "$(dirname "$0")/../.."
A=/tmp/rigscope-aside
KEEP=${KEEP:-$(ls -d bench/cuda/results/s[0-9]*/ | sort -V | tail -1 | xargs basename)}
case "${1:-}" in
out)
	[ ! -e "$A" ] || { echo "aside: $A exists (run 'in' first)" >&2; exit 1; }
	mkdir -p "$A/results" "$A/kernels"
	mv kernels/*.gz "$A/kernels/"
	for d in bench/cuda/results/*; do
		case " $KEEP " in *" $(basename "$d") "*) ;; *) mv "$d" "$A/results/" ;; esac
	done
	for d in engine ui internal third_party gpu assets; do [ ! -e "$d" ] || mv "$d" "$A/"; done
	echo "aside: moved out (kept results: $KEEP)" ;;
in)
	[ -d "$A" ] || { echo "aside: nothing in $A" >&2; exit 1; }
	mv "$A"/kernels/* kernels/
	mv "$A"/results/* bench/cuda/results/
	for d in engine ui internal third_party gpu assets; do [ ! -e "$A/$d" ] || mv "$A/$d" ./; done
	rmdir "$A/kernels" "$A/results" "$A"
	git status --short | head ;;
*)
	echo "usage: [KEEP=sN] sh bench/cuda/aside.sh out|in (KEEP: the results folders to keep, separated by spaces; default the newest)" >&2; exit 2 ;;
esac
