package loader

import (
	"testing"
	"time"

	"rigscope/engine/loader/gguf"
)

// FuzzGGUFSource runs the whole GGUF path (parse, config from metadata,
// weight validation, tokenizer from metadata) on arbitrary bytes, seeded
// with a tiny valid model. It must never panic, and a source it accepts must
// hand out every expected tensor.
func FuzzGGUFSource(f *testing.F) {
	t := &testing.T{}
	f.Add(ggufBytes(t, tinyKV("llama"), tinyTensors(tinyCfg)))
	f.Add(ggufBytes(t, tinyKV("llama")[:5], tinyTensors(tinyCfg)[:3]))
	f.Fuzz(func(t *testing.T, data []byte) {
		tm := time.AfterFunc(10*time.Second, func() { panic("FuzzGGUFSource: one input ran over 10 s (hang?)") })
		defer tm.Stop()
		gf, err := gguf.Parse(data)
		if err != nil {
			return
		}
		src, err := ggufSource(gf)
		if err != nil {
			return
		}
		for name := range ExpectedShapes(src.Config()) {
			if _, err := src.Tensor(name); err != nil {
				t.Fatalf("accepted source lacks %q: %v", name, err)
			}
		}
		if tok, err := src.Tokenizer(); err == nil {
			tok.Decode(tok.Encode("a b", true))
		}
	})
}
