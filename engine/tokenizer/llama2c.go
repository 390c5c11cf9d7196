package tokenizer

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"rigscope/internal/safefile"
)

// LoadLlama2C reads a llama2.c tokenizer.bin holding vocabSize pieces
// (vocabSize <= 0 reads every piece in the file).
func LoadLlama2C(path string, vocabSize int) (Tokenizer, error) {
	data, err := safefile.ReadFile(path, "tokenizer", safefile.TokenizerLimit)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	v, err := ParseLlama2C(data, vocabSize)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// ParseLlama2C decodes llama2.c's tokenizer.bin: int32 max_token_length,
// then per token float32 score, int32 length and the bytes. As run.c
// assumes: <unk>=0, BOS=1, EOS=2, a dummy space prefix, and byte fallback
// through "<0xNN>" pieces. The export wrote "▁" as " " and BOS/EOS as
// "\n<s>\n" and "\n</s>\n"; pieces are converted back to SentencePiece form.
func ParseLlama2C(data []byte, vocabSize int) (Vocab, error) {
	if len(data) < 4 {
		return Vocab{}, fmt.Errorf("llama2.c tokenizer: %w: %d bytes, no header", ErrBadVocab, len(data))
	}
	maxLen := int32(binary.LittleEndian.Uint32(data))
	if maxLen < 0 {
		return Vocab{}, fmt.Errorf("llama2.c tokenizer: %w: max_token_length %d", ErrBadVocab, maxLen)
	}
	off := 4
	v := Vocab{Model: "llama", UNK: 0, BOS: 1, EOS: 2, AddBOS: true, AddSpacePrefix: true}
	for i := 0; vocabSize <= 0 || i < vocabSize; i++ {
		if vocabSize <= 0 && off == len(data) {
			break
		}
		if len(data)-off < 8 {
			return Vocab{}, fmt.Errorf("llama2.c tokenizer: %w: token %d: truncated at byte %d", ErrBadVocab, i, off)
		}
		score := math.Float32frombits(binary.LittleEndian.Uint32(data[off:]))
		n := int32(binary.LittleEndian.Uint32(data[off+4:]))
		off += 8
		if n < 0 || int(n) > len(data)-off {
			return Vocab{}, fmt.Errorf("llama2.c tokenizer: %w: token %d: length %d with %d bytes left", ErrBadVocab, i, n, len(data)-off)
		}
		raw := string(data[off : off+int(n)])
		off += int(n)
		piece, typ := llama2cPiece(i, raw)
		v.Tokens = append(v.Tokens, piece)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	if len(v.Tokens) < 3 {
		return Vocab{}, fmt.Errorf("llama2.c tokenizer: %w: %d tokens, need <unk>, BOS and EOS", ErrBadVocab, len(v.Tokens))
	}
	return v, nil
}

// llama2cPiece turns an exported piece back into its SentencePiece form.
func llama2cPiece(id int, raw string) (string, int32) {
	switch id {
	case 0:
		return strings.Trim(raw, "\n"), TypeUnknown
	case 1, 2:
		return strings.Trim(raw, "\n"), TypeControl
	}
	if _, ok := parseBytePiece(raw); ok {
		return raw, TypeByte
	}
	return strings.ReplaceAll(raw, " ", "▁"), TypeNormal
}
