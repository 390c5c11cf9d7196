#!/usr/bin/env bash
# The dashboard of a run made on the GPU machine, here: open the panel under
# Xvfb with --replay RUNLOG --tab dashboard, wait for the dashboard to draw,
# screenshot the screen and check the shot is not blank (as .ci/window does).
#   bench/cuda/replay.sh RUNLOG.jsonl [OUT.png]
# The run logs come from a device call: bench/cuda/tp.sh (--log-dir $OUT/runs
# in its archive) or cuda-check -checks runlog -runlogs DIR. Needs Debian
# xvfb, x11-apps (xwd), imagemagick and the panel's build packages (make deps);
# builds bin/rigscope when it is missing. WAIT (default 20 s; a busy machine needs more) is how long the
# panel gets to load its default model and draw the replayed run.
set -euo pipefail
cd "$(dirname "$0")/../.."
log=${1:?usage: bench/cuda/replay.sh RUNLOG.jsonl [OUT.png]}
png=${2:-bin/replay/$(basename "$log" .jsonl).png}
out=$(dirname "$png")
mkdir -p "$out"
[ -x bin/rigscope ] || go build -o bin/rigscope .
display=${DISPLAY_NUM:-:97}
Xvfb "$display" -screen 0 1280x${HEIGHT:-1500}x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb=$!
app=
trap 'kill $app $xvfb 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	[ -e "/tmp/.X11-unix/X${display#:}" ] && break
	sleep 0.1
done
# A log dir of its own: the replay is not mixed into this machine's runs.
DISPLAY=$display ./bin/rigscope --replay "$log" --tab dashboard --window-size 1280x${HEIGHT:-1500} --log-dir "$out/runs" >"$out/app.log" 2>&1 &
app=$!
sleep "${WAIT:-20}"
if ! kill -0 "$app" 2>/dev/null; then
	echo "replay: the panel ended before the screenshot:" >&2
	cat "$out/app.log" >&2
	exit 1
fi
xwd -root -display "$display" -silent -out "$out/shot.xwd"
convert "$out/shot.xwd" "$png"
rm -f "$out/shot.xwd"
if grep -q "Error in Fyne call thread" "$out/app.log"; then
	echo "replay: Fyne threading errors in the log:" >&2
	grep -A3 "Error in Fyne call thread" "$out/app.log" >&2
	exit 1
fi
sd=$(convert "$png" -format '%[fx:standard_deviation]' info:)
echo "replay: $log -> $png (standard deviation $sd)"
awk -v sd="$sd" 'BEGIN { exit !(sd > 0.01) }' || { echo "replay: the screenshot is blank" >&2; exit 1; }
