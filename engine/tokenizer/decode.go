package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// text returns the bytes id stands for in decoded output: "" for control,
// unknown and unused tokens and for ids out of range.
func (t *tok) text(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	p := t.pieces[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUnused:
		return ""
	case TypeUserDefined:
		return p
	case TypeByte:
		if t.kind == kindSPM {
			if b, ok := parseBytePiece(p); ok {
				return string([]byte{b})
			}
		}
	}
	if t.kind == kindByteBPE {
		return string(byteDecode(p, nil))
	}
	return strings.ReplaceAll(p, "▁", " ")
}

// parseBytePiece reads "<0xNN>".
func parseBytePiece(p string) (byte, bool) {
	if len(p) != 6 || p[:3] != "<0x" || p[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(p[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// stripsLeadingSpace reports whether decoding drops the space that the
// dummy prefix put before the first word.
func (t *tok) stripsLeadingSpace() bool { return t.kind == kindSPM && t.addSpacePrefix }

// Decode turns ids into text. With SentencePiece's dummy prefix, the
// leading space of the first text-bearing token is dropped (as Hugging
// Face's Strip decoder and llama2.c's run.c do). Byte tokens that do not
// form valid UTF-8 are kept as raw bytes.
func (t *tok) Decode(ids []int32) string {
	var sb strings.Builder
	strip := t.stripsLeadingSpace()
	for _, id := range ids {
		s := t.text(id)
		if s == "" {
			continue
		}
		if strip {
			s = strings.TrimPrefix(s, " ")
			strip = false
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// StreamDecoder turns tokens into text one at a time for streaming output:
// the concatenation of what Next returns (plus Flush) equals Decode of all
// ids, and no returned chunk ends inside a UTF-8 sequence that a later
// byte token may complete.
type StreamDecoder struct {
	t       Tokenizer
	strip   bool   // the first text-bearing token still has to lose its leading space
	pending []byte // an incomplete UTF-8 sequence held back
}

// NewStreamDecoder starts a stream decoder over t.
func NewStreamDecoder(t Tokenizer) *StreamDecoder {
	d := &StreamDecoder{t: t}
	if tt, ok := t.(*tok); ok {
		d.strip = tt.stripsLeadingSpace()
	}
	return d
}

// Next returns the new text that id adds.
func (d *StreamDecoder) Next(id int32) string {
	var s string
	if tt, ok := d.t.(*tok); ok {
		s = tt.text(id)
	} else {
		s = d.t.Decode([]int32{id})
	}
	if s == "" {
		return ""
	}
	if d.strip {
		s = strings.TrimPrefix(s, " ")
		d.strip = false
	}
	d.pending = append(d.pending, s...)
	n := completePrefix(d.pending)
	out := string(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns the bytes still held back (an unfinished UTF-8 sequence at
// the end of the stream) and resets the decoder's pending state.
func (d *StreamDecoder) Flush() string {
	out := string(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns how many leading bytes of b can be emitted: all of
// them unless b ends with the start of a UTF-8 sequence whose continuation
// bytes have not arrived yet.
func completePrefix(b []byte) int {
	// Look back at most 3 bytes for the lead byte of the last sequence.
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return len(b) // ASCII: complete
		}
		if c >= 0xC0 { // a lead byte
			need := 0
			switch {
			case c >= 0xF0 && c <= 0xF4:
				need = 4
			case c >= 0xE0 && c < 0xF0:
				need = 3
			case c >= 0xC2 && c < 0xE0:
				need = 2
			default:
				return len(b) // invalid lead byte: never completes
			}
			if back < need && validSoFar(b[len(b)-back:], need) {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}

// validSoFar reports whether p (a lead byte and fewer continuation bytes
// than it needs) can still become a valid UTF-8 sequence of need bytes.
func validSoFar(p []byte, need int) bool {
	// Some lead bytes (E0, ED, F0, F4) restrict the second byte's range, so
	// try completions from several parts of the continuation range.
	for _, c := range []byte{0x80, 0x90, 0xA0, 0xBF} {
		q := append(make([]byte, 0, 4), p...)
		for len(q) < need {
			q = append(q, c)
		}
		if r, n := utf8.DecodeRune(q); r != utf8.RuneError && n == need {
			return true
		}
	}
	return false
}
