package llama2c

import "testing"

// FuzzParse feeds arbitrary bytes to Parse, seeded with tiny checkpoints.
func FuzzParse(f *testing.F) {
	f.Add(writeTiny(f, tiny))
	f.Add(writeTiny(f, Header{8, 12, 1, 2, 2, -3, 2}))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := Parse(data)
		if Sniff(data, int64(len(data))) != (err == nil) {
			t.Fatalf("Sniff and Parse disagree: Parse error %v", err)
		}
		if err != nil {
			return
		}
		for _, name := range lf.Names() {
			tt, err := lf.Tensor(name)
			if err != nil {
				t.Fatalf("Tensor(%q): %v", name, err)
			}
			if err := tt.Check(); err != nil {
				t.Fatalf("Tensor(%q) failed Check: %v", name, err)
			}
		}
	})
}
