package main

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestCommandNames: every listed command has a name, a summary and a Run,
// and no two share a name.
func TestCommandNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range commands {
		if c.Name == "" || c.Summary == "" || c.Run == nil || strings.HasPrefix(c.Name, "-") || c.Name == "help" {
			t.Errorf("command %q: want a name (not help, not a flag), a summary and a Run", c.Name)
		}
		if seen[c.Name] {
			t.Errorf("command %q is listed twice", c.Name)
		}
		seen[c.Name] = true
	}
}

var genArgs = []string{"generate", "--model", "synthetic:tiny", "--prompt-ids", "1,5,6,7,5,6", "--max-tokens", "6"}

// TestMetricsAddrFlag: generate and bench take --metrics-addr; a bad or
// taken address fails the command with the address named, a bare port
// serves on loopback only, and 0.0.0.0 warns.
func TestMetricsAddrFlag(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		args      []string
		err, warn string
	}{
		{[]string{"--metrics-addr", "9400"}, `--metrics-addr 9400: "9400": want HOST:PORT or :PORT`, ""},
		{[]string{"--metrics-addr", ":" + port}, "--metrics-addr :" + port + ": cannot listen on 127.0.0.1:" + port, ""},
		{[]string{"--metrics-addr", ":0"}, "", "serving Prometheus metrics at http://127.0.0.1:"},
		{[]string{"--metrics-addr", "0.0.0.0:0"}, "", "beyond loopback and unauthenticated"},
	} {
		for _, cmd := range [][]string{genArgs, {"bench", "--model", "synthetic:small", "--drafters", "ngram", "--k", "2", "--tree", "0", "--prompts", "1", "--prompt-len", "16", "--max-tokens", "4"}} {
			args := append(append([]string{}, cmd...), tc.args...)
			var out, errOut bytes.Buffer
			err := program().Dispatch(context.Background(), args, &out, &errOut)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("rigscope %s: error %v, want %q", strings.Join(args, " "), err, tc.err)
			case tc.err == "" && err != nil:
				t.Errorf("rigscope %s: %v", strings.Join(args, " "), err)
			case tc.warn != "" && !strings.Contains(errOut.String(), tc.warn):
				t.Errorf("rigscope %s: stderr %q, want %q", strings.Join(args, " "), errOut.String(), tc.warn)
			}
		}
	}
}
