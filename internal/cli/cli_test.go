package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"
)

func TestExitStatus(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		code int
		msg  string
	}{
		{"ok", live, nil, 0, ""},
		{"error", live, errors.New("bad flag"), 1, "rigscope: bad flag\n"},
		{"help", live, flag.ErrHelp, 1, ""},
		{"interrupted with an error", done, errors.New("generate: stopped after 3 tokens"), ExitInterrupted, "rigscope: interrupted: generate: stopped after 3 tokens\n"},
		{"interrupted, returned nil", done, nil, ExitInterrupted, "rigscope: interrupted\n"},
	} {
		var buf bytes.Buffer
		if code := exitStatus(tc.ctx, tc.err, &buf); code != tc.code || buf.String() != tc.msg {
			t.Errorf("%s: exitStatus = %d, %q; want %d, %q", tc.name, code, buf.String(), tc.code, tc.msg)
		}
	}
}
