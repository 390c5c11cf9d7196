#!/usr/bin/env bash
# Screenshots of each view of the panel (chat, dashboard, what if, runs) in the real window under Xvfb, at
# 1600x1000 and 1280x800 (issue 25): one --autorun generation on the model
# (default gocoder-14m-hf from ../shared/models, else synthetic:tiny), the
# window shown on each tab (--tab), captured while it lingers.
# Needs Debian xvfb, x11-apps, imagemagick. Output: bin/shots/VIEW-WxH.png.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin/shots
mkdir -p "$out"
go build -o bin/rigscope .
model=${MODEL:-../shared/models/gocoder-14m-hf}
[ -e "$model" ] || model=synthetic:tiny
for size in 1600x1000 1280x800; do
	display=:96
	Xvfb "$display" -screen 0 "${size}x24" -nolisten tcp >"$out/xvfb.log" 2>&1 &
	xvfb=$!
	sleep 1
	for tab in chat dashboard whatif runs; do
		rm -f "$out/done"
		HOME=$PWD/$out/home DISPLAY=$display timeout 120 ./bin/rigscope --model "$model" --tab "$tab" \
			--autorun "package main" --quit-after-run --done-file "$out/done" --linger 3s --max-tokens 120 \
			>"$out/app-$tab-$size.log" 2>&1 &
		app=$!
		for _ in $(seq 600); do [ -e "$out/done" ] && break; kill -0 "$app" 2>/dev/null || break; sleep 0.1; done
		sleep 1
		xwd -root -display "$display" -silent -out "$out/shot.xwd"
		convert "$out/shot.xwd" "$out/$tab-$size.png"
		wait "$app"
		echo "panel-shots: $out/$tab-$size.png"
	done
	kill "$xvfb"; wait "$xvfb" 2>/dev/null || true
done
rm -f "$out/shot.xwd" "$out/done"
