package tokenizer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"rigscope/internal/safefile"
)

// LoadSentencePieceModel reads a SentencePiece tokenizer.model file.
func LoadSentencePieceModel(path string) (Tokenizer, error) {
	data, err := safefile.ReadFile(path, "tokenizer", safefile.TokenizerLimit)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	v, err := ParseSentencePieceModel(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

// ParseSentencePieceModel decodes the parts of a SentencePiece ModelProto
// (sentencepiece_model.proto) a tokenizer needs: the pieces with score and
// type, trainer_spec's special ids and normalizer_spec.add_dummy_prefix.
func ParseSentencePieceModel(data []byte) (Vocab, error) {
	v := Vocab{Model: "llama", UNK: 0, BOS: 1, EOS: 2, AddBOS: true, AddSpacePrefix: true}
	err := protoFields(data, func(field int, wire int, val uint64, buf []byte) error {
		switch field {
		case 1: // repeated SentencePiece pieces
			if wire != 2 {
				return fmt.Errorf("piece %d: wire type %d", len(v.Tokens), wire)
			}
			piece, score, typ, err := parsePiece(buf)
			if err != nil {
				return fmt.Errorf("piece %d: %w", len(v.Tokens), err)
			}
			v.Tokens = append(v.Tokens, piece)
			v.Scores = append(v.Scores, score)
			v.Types = append(v.Types, typ)
		case 2: // TrainerSpec
			if wire != 2 {
				return fmt.Errorf("trainer_spec: wire type %d", wire)
			}
			return protoFields(buf, func(f, w int, x uint64, _ []byte) error {
				if w != 0 {
					return nil
				}
				switch f {
				case 40:
					v.UNK = int32(int64(x))
				case 41:
					v.BOS = int32(int64(x))
				case 42:
					v.EOS = int32(int64(x))
				}
				return nil
			})
		case 3: // NormalizerSpec
			if wire != 2 {
				return fmt.Errorf("normalizer_spec: wire type %d", wire)
			}
			return protoFields(buf, func(f, w int, x uint64, _ []byte) error {
				if f == 3 && w == 0 {
					v.AddSpacePrefix = x != 0
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return Vocab{}, fmt.Errorf("sentencepiece model: %w", err)
	}
	if len(v.Tokens) == 0 {
		return Vocab{}, fmt.Errorf("sentencepiece model: %w: no pieces", ErrBadVocab)
	}
	n := int32(len(v.Tokens))
	for _, p := range []*int32{&v.UNK, &v.BOS, &v.EOS} {
		if *p < 0 || *p >= n {
			*p = -1
		}
	}
	v.AddBOS = v.BOS >= 0
	return v, nil
}

// parsePiece decodes one ModelProto.SentencePiece message.
func parsePiece(data []byte) (string, float32, int32, error) {
	var piece string
	var score float32
	typ := TypeNormal
	err := protoFields(data, func(f, w int, x uint64, buf []byte) error {
		switch {
		case f == 1 && w == 2:
			piece = string(buf)
		case f == 2 && w == 5:
			score = math.Float32frombits(uint32(x))
		case f == 3 && w == 0:
			if x < 1 || x > 6 {
				return fmt.Errorf("piece type %d", x)
			}
			typ = int32(x)
		}
		return nil
	})
	return piece, score, typ, err
}

var errTruncated = errors.New("truncated protobuf")

// protoFields walks the fields of one protobuf message, calling fn with
// the field number, wire type and either the scalar value (varint, fixed32,
// fixed64) or the bytes of a length-delimited field.
func protoFields(data []byte, fn func(field, wire int, val uint64, buf []byte) error) error {
	for len(data) > 0 {
		key, n := binary.Uvarint(data)
		if n <= 0 {
			return errTruncated
		}
		data = data[n:]
		field, wire := int(key>>3), int(key&7)
		if field == 0 {
			return errors.New("protobuf field number 0")
		}
		var val uint64
		var buf []byte
		switch wire {
		case 0:
			val, n = binary.Uvarint(data)
			if n <= 0 {
				return errTruncated
			}
			data = data[n:]
		case 1:
			if len(data) < 8 {
				return errTruncated
			}
			val = binary.LittleEndian.Uint64(data)
			data = data[8:]
		case 2:
			l, n := binary.Uvarint(data)
			if n <= 0 || l > uint64(len(data)-n) {
				return errTruncated
			}
			buf = data[n : n+int(l)]
			data = data[n+int(l):]
		case 5:
			if len(data) < 4 {
				return errTruncated
			}
			val = uint64(binary.LittleEndian.Uint32(data))
			data = data[4:]
		default:
			return fmt.Errorf("protobuf wire type %d (field %d) not supported", wire, field)
		}
		if err := fn(field, wire, val, buf); err != nil {
			return err
		}
	}
	return nil
}
