//go:build !headless

package panel

import (
	"context"
	"strings"
	"testing"
)

// Bad panel flags are refused before any window opens, with what to do.
func TestPanelFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", "tpu"}, `device "tpu" is not in this build`},
		{[]string{"--quit-after-run"}, "--quit-after-run needs --autorun"},
		{[]string{"--gpu-interval", "1ms"}, "at least 10ms"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--ctx", "-1"}, "--ctx -1 is negative"},
		{[]string{"--tp", "-2"}, "--tp -2 is negative"},
		{[]string{"--max-tokens", "-5"}, "--max-tokens -5 is negative"},
	} {
		err := run(context.Background(), tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}
