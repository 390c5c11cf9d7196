package writegguf

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteGGUFCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tiny.gguf")
	for _, tc := range []struct {
		args []string
		want string // "" = succeeds
	}{
		{[]string{"--model", "synthetic:tiny", "--type", "q8_0"}, "--model, --type and --out are required"},
		{[]string{"--model", "synthetic:tiny", "--type", "q5_k_m", "--out", out}, `"q5_k_m" is not one this writer makes (q4_k_m, q8_0, q4_0, bf16, f16)`},
		{[]string{"--model", "synthetic:tiny", "--type", "q8_0", "--out", out, "extra"}, `unexpected argument "extra"`},
		{[]string{"--model", "synthetic:huge", "--type", "q8_0", "--out", out}, `unknown preset "huge"`},
		{[]string{"--model", "synthetic:tiny", "--type", "Q8_0", "--out", out}, ""},
		{[]string{"--model", "synthetic:tiny", "--type", "f16", "--out", out}, "exists; remove it or pass --force"},
		{[]string{"--model", "synthetic:tiny", "--type", "f16", "--out", out, "--force"}, ""},
	} {
		var stdout, stderr bytes.Buffer
		err := runWriteGGUF(context.Background(), tc.args, &stdout, &stderr)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want == "" && !strings.Contains(stdout.String(), "wrote "+out):
			t.Errorf("%v: printed %q", tc.args, stdout.String())
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
