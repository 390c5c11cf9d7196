#!/usr/bin/env bash
# A long session of mixed runs in the real window under Xvfb (issue 25):
# the panel on synthetic:tiny at 1280x800, driven by xdotool for MINUTES
# (default 30): prompts sent with Enter and Ctrl+Enter, multi-line prompts
# (Shift+Enter), runs stopped with Esc, new chats (Ctrl+N), the tabs
# switched (Ctrl+Tab), with a screenshot of the window every 5 minutes;
# then the app's log is checked for Fyne threading errors ("Error in Fyne
# call thread": a UI update not made through fyne.Do).
# Needs Debian xvfb, x11-apps, imagemagick, xdotool. Output in bin/session/.
set -euo pipefail
cd "$(dirname "$0")/.."
out=bin/session
mkdir -p "$out"
rm -f "$out"/*.png "$out"/app.log
go build -o bin/rigscope .
display=:98
Xvfb "$display" -screen 0 1280x800x24 -nolisten tcp >"$out/xvfb.log" 2>&1 &
xvfb=$!
export DISPLAY=$display
sleep 1
# A profile of its own, so the session leaves the user's settings alone.
export HOME=$PWD/$out/home
mkdir -p "$HOME"
./bin/rigscope --model synthetic:tiny --max-tokens 300 --log-dir "$out/runs" >"$out/app.log" 2>&1 &
app=$!
trap 'kill "$app" "$xvfb" 2>/dev/null || true' EXIT
sleep 5
win=$(xdotool search --sync --onlyvisible --pid "$app" | head -1)
xdotool windowactivate --sync "$win" 2>/dev/null || true
shot() { xwd -root -silent -out "$out/$1.xwd" && convert "$out/$1.xwd" "$out/$1.png" && rm "$out/$1.xwd"; }
end=$(( $(date +%s) + ${MINUTES:-30} * 60 ))
next_shot=$(date +%s)
runs=0
while [ "$(date +%s)" -lt "$end" ]; do
	kill -0 "$app" 2>/dev/null || { echo "session: the app exited after $runs runs" >&2; cat "$out/app.log" >&2; exit 1; }
	# The Chat tab, then the message box (positions at 1280x800).
	focus() { xdotool mousemove 28 62 click 1; sleep 0.3; xdotool mousemove 350 718 click 1; sleep 0.2; }
	case $(( runs % 6 )) in
	0) focus; xdotool type --delay 5 "func main() {"; xdotool key Return ;;
	1) focus; xdotool type --delay 5 "first line"; xdotool key shift+Return; xdotool type --delay 5 "second line"; xdotool key Return ;;
	2) focus; xdotool type --delay 5 "a long answer please"; xdotool key ctrl+Return; sleep 0.3; xdotool key Escape ;;
	3) xdotool key ctrl+Tab; sleep 1; xdotool key ctrl+Tab; sleep 1; xdotool key ctrl+Tab ;;
	4) focus; xdotool key ctrl+n; xdotool type --delay 5 "hello again"; xdotool key Return ;;
	5) focus; xdotool type --delay 5 "package main"; xdotool key Return ;;
	esac
	runs=$(( runs + 1 ))
	sleep 4
	if [ "$(date +%s)" -ge "$next_shot" ]; then
		shot "at-$(date +%H%M)"
		next_shot=$(( $(date +%s) + 300 ))
	fi
done
shot end
kill "$app" 2>/dev/null || true
wait "$app" 2>/dev/null || true
if grep -q "Error in Fyne call thread" "$out/app.log"; then
	echo "session: Fyne threading errors after $runs actions:" >&2
	grep -c "Error in Fyne call thread" "$out/app.log" >&2
	exit 1
fi
echo "session: ${MINUTES:-30} minutes, $runs actions, $(ls "$out/runs" 2>/dev/null | wc -l) run logs, no Fyne threading errors in $(wc -l <"$out/app.log") log lines; screenshots in $out"
