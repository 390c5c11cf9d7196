#!/usr/bin/env bash
# Runs every Go fuzz target in the repository (or those under the packages
# given as arguments) for FUZZTIME seconds each and prints one row per
# target: executions, new interesting inputs, and whether it crashed.
# A crash leaves its input under the package's testdata/fuzz/FuzzXxx/, which
# later plain `go test` runs replay.
#
#   bench/fuzz.sh                 # all fuzzers, 30 s each
#   FUZZTIME=60 bench/fuzz.sh ./engine/loader/...
#   FUZZTIME=5 bench/fuzz.sh      # what `make test` runs (CI)
# FUZZTAGS (default ci) are the build tags: with ci, a package that imports
# Fyne builds without the X11 headers (no fuzzer needs a window).
set -uo pipefail
cd "$(dirname "$0")/.."
T="${FUZZTIME:-${1:-30}}"
[[ "${1:-}" =~ ^[0-9]+$ ]] && shift
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

# package directory and fuzz target of every "func FuzzXxx(f *testing.F)".
targets=$(go list -f '{{.Dir}}' "${pkgs[@]}" 2>/dev/null | while read -r dir; do
	grep -ho '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' "$dir"/*_test.go 2>/dev/null |
		sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' | sort -u | sed "s|^|$dir |"
done)
if [ -z "$targets" ]; then
	echo "no fuzz targets under ${pkgs[*]}" >&2
	exit 1
fi

root="$(pwd)"
printf '%-34s %-16s %6s %12s %9s %12s  %s\n' package fuzzer secs execs execs/s interesting result
status=0
while read -r dir fn; do
	rel="./${dir#"$root"/}"
	out="$log/$(echo "$rel.$fn" | tr '/' '_').log"
	go test -tags "${FUZZTAGS-ci}" -run '^$' -fuzz "^${fn}\$" -fuzztime "${T}s" "$rel" >"$out" 2>&1
	rc=$?
	# Go's fuzz coordinator can fail the run with "context deadline exceeded"
	# when a worker stops late at the end of -fuzztime on a loaded machine;
	# that writes no input (nothing crashed). Run such a target once more; a
	# second failure, or any failure that wrote an input, counts.
	if [ $rc -ne 0 ] && grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out"; then
		go test -tags "${FUZZTAGS-ci}" -run '^$' -fuzz "^${fn}\$" -fuzztime "${T}s" "$rel" >"$out" 2>&1
		rc=$?
	fi
	# fuzz: elapsed: 60s, execs: 5864213 (97737/sec), new interesting: 12 (total: 120)
	last=$(grep -E '^fuzz: elapsed: .*execs: ' "$out" | tail -1)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	rate="?"
	[ -n "$execs" ] && rate=$((execs / T))
	newi=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	if [ $rc -eq 0 ]; then
		result=ok
	else
		status=1
		crash=$(sed -nE 's/.*Failing input written to (.*)/\1/p' "$out" | head -1)
		result="CRASH ${crash:-(see below)}"
	fi
	printf '%-34s %-16s %6s %12s %9s %12s  %s\n' "$rel" "$fn" "$T" "${execs:-?}" "${rate:-?}" "${newi:-?}" "$result"
	if [ $rc -ne 0 ]; then
		grep -vE '^fuzz: elapsed' "$out" | head -40 | sed 's/^/    /'
	fi
done <<<"$targets"
exit $status
