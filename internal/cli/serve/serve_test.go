package serve

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Bad serve flags are refused before any model loads, each by name.
func TestServeFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--queue", "0"}, "--queue 0 must be at least 1"},
		{[]string{"--tp", "0"}, "--tp 0 must be at least 1"},
		{[]string{"--addr", "8080"}, `--addr: "8080": want HOST:PORT`},
		{[]string{"--chat-template", "alpaca"}, `--chat-template: tokenizer: unknown chat template "alpaca"`},
		{[]string{"--drafter", "model"}, "needs a draft model file (--draft PATH)"},
	} {
		err := Command.Run(context.Background(), tc.args, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %q = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
