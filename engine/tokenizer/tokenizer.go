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
