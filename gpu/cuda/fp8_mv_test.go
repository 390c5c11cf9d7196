package cuda

import "testing"

// mf8Split gives llama-8b's shapes on the H200 (132 SMs) the splits the
// comment says, and the knob prints as it parses.
func TestMF8Split(t *testing.T) {
	for _, c := range []struct{ rows, want int }{{6144, 2}, {14336, 1}, {4096, 4}, {200, 4}, {128256, 1}} {
		if got := mf8Split(c.rows, 132); got != c.want {
			t.Errorf("mf8Split(%d, 132) = %d, want %d", c.rows, got, c.want)
		}
	}
	if d, _ := parseF8MV(""); d.String() != defaultF8MV {
		t.Errorf("parseF8MV(\"\") = %q, want the default %q", d.String(), defaultF8MV)
	}
	if off, _ := parseF8MV("0"); off.on || off.String() != "" {
		t.Errorf("parseF8MV(\"0\") = %+v, want off", off)
	}
	for _, env := range []string{defaultF8MV, "1", "1,r2", "1,p", "1,r2,p,b,ks4", "1,t,ks1", "1,l", "1,s", "1,b,sw,w4", "1,ks2,s,w8", "1,s,w16"} {
		k, err := parseF8MV(env)
		if err != nil {
			t.Fatal(err)
		}
		if k.String() != env {
			t.Errorf("parseF8MV(%q).String() = %q", env, k.String())
		}
	}
}
