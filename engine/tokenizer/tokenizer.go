// Package tokenizer turns text into token ids and back: SentencePiece BPE
// with byte fallback, and Hugging Face BPE (SentencePiece-style and
// byte-level with a pre-tokenizer regex).
package tokenizer

// Tokenizer is what the engine needs from a vocabulary.
type Tokenizer interface {
	// Encode tokenizes text. With addSpecial, BOS (and EOS) are added as the
	// format declares (e.g. SentencePiece's add_bos_token).
	Encode(text string, addSpecial bool) []int32
	// Decode turns ids into text; special tokens (BOS/EOS/control) decode to "".
	Decode(ids []int32) string
	// Piece is the raw vocabulary entry of id (for comparing vocabularies).
	Piece(id int32) string
	VocabSize() int
	BOS() int32 // -1 when none
	EOS() int32 // -1 when none
}

// Vocab is a vocabulary as GGUF metadata states it (tokenizer.ggml.*); the
// other formats are converted to it where they can be.
type Vocab struct {
	Model  string    // "llama" (SentencePiece BPE) or "gpt2" (byte-level BPE)
	Pre    string    // pre-tokenizer name for byte-level BPE ("gpt-2", "llama-bpe", "deepseek-coder", ...)
	Tokens []string  // piece per id
	Scores []float32 // SentencePiece merge scores (may be nil for gpt2)
	Types  []int32   // 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
	Merges []string  // "a b" merge rules, highest priority first (gpt2)
	BOS    int32     // -1 when none
	EOS    int32     // -1 when none
	UNK    int32     // -1 when none
	AddBOS bool
	AddEOS bool
	// AddSpacePrefix is SentencePiece's add_dummy_prefix.
	AddSpacePrefix bool
}
