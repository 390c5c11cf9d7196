package tokenizer

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Token types as GGUF's tokenizer.ggml.token_type and SentencePiece's
// ModelProto.SentencePiece.Type number them.
const (
	TypeNormal      int32 = 1
	TypeUnknown     int32 = 2
	TypeControl     int32 = 3
	TypeUserDefined int32 = 4
	TypeUnused      int32 = 5
	TypeByte        int32 = 6
)

// kind is the segmentation algorithm of a vocabulary.
type kind int

const (
	kindSPM     kind = iota // SentencePiece BPE on "▁"-escaped text with <0xNN> byte fallback
	kindByteBPE             // GPT-2 byte-level BPE on pre-tokenized words
)

// ErrBadVocab is wrapped by every error about an unusable vocabulary.
var ErrBadVocab = errors.New("bad vocabulary")

// tok is the one Tokenizer implementation; every loader builds one.
type tok struct {
	kind   kind
	pieces []string
	scores []float32 // per id; used by SPM merging unless ranks is set
	types  []int32   // per id
	ids    map[string]int32

	// ranks holds merge rules keyed by (left id, right id): BPE with rank
	// order (GPT-2 style and Hugging Face tokenizer.json). nil for
	// score-ordered SentencePiece.
	ranks map[uint64]merge

	byteIDs  [256]int32 // SPM byte fallback ids (<0xNN>); -1 when absent
	specials []int32    // control/user-defined/unknown ids, longest text first

	bos, eos, unk  int32
	addBOS, addEOS bool

	addSpacePrefix  bool // SPM: prefix "▁" (add_dummy_prefix)
	prefixFirstOnly bool // SPM: only before the first text fragment (HF Metaspace prepend_scheme "first")
	splitOnSpace    bool // SPM: split words before each "▁" (HF Metaspace split=true)

	pre          *pretokenizer // byte-level BPE word splitter
	ignoreMerges bool          // byte-level BPE: a word that is a token is kept whole (Llama 3)
}

// merge is one BPE merge rule's result.
type merge struct {
	rank int32
	id   int32 // id of the merged piece
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// New builds a tokenizer from a vocabulary as GGUF metadata states it.
// Model "llama" is SentencePiece BPE merged by score; "gpt2" is byte-level
// BPE merged by rank, with the pre-tokenizer named by v.Pre.
func New(v Vocab) (Tokenizer, error) {
	t, err := newTok(v)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func newTok(v Vocab) (*tok, error) { return buildTok(v, nil) }

// buildTok builds a tokenizer; merge rules come from pairs when given
// (Hugging Face's pair form, which allows spaces inside pieces), else from
// v.Merges.
func buildTok(v Vocab, pairs [][2]string) (*tok, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("tokenizer: %w: no tokens", ErrBadVocab)
	}
	if v.Scores != nil && len(v.Scores) != n {
		return nil, fmt.Errorf("tokenizer: %w: %d scores for %d tokens", ErrBadVocab, len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("tokenizer: %w: %d token types for %d tokens", ErrBadVocab, len(v.Types), n)
	}
	for _, id := range []struct {
		name string
		id   int32
	}{{"BOS", v.BOS}, {"EOS", v.EOS}, {"UNK", v.UNK}} {
		if id.id < -1 || int(id.id) >= n {
			return nil, fmt.Errorf("tokenizer: %w: %s id %d outside vocabulary of %d", ErrBadVocab, id.name, id.id, n)
		}
	}
	if v.AddBOS && v.BOS < 0 {
		return nil, fmt.Errorf("tokenizer: %w: add BOS without a BOS token", ErrBadVocab)
	}
	if v.AddEOS && v.EOS < 0 {
		return nil, fmt.Errorf("tokenizer: %w: add EOS without an EOS token", ErrBadVocab)
	}
	t := &tok{
		pieces: v.Tokens,
		scores: v.Scores,
		types:  v.Types,
		ids:    make(map[string]int32, n),
		bos:    v.BOS, eos: v.EOS, unk: v.UNK,
		addBOS: v.AddBOS, addEOS: v.AddEOS,
		addSpacePrefix: v.AddSpacePrefix,
	}
	if t.scores == nil {
		t.scores = make([]float32, n)
	}
	if t.types == nil {
		t.types = make([]int32, n)
		for i := range t.types {
			t.types[i] = TypeNormal
		}
	}
	for i, p := range v.Tokens {
		t.ids[p] = int32(i) // the last of duplicate pieces wins, as in llama.cpp
	}
	switch v.Model {
	case "llama":
		t.kind = kindSPM
		if pairs != nil {
			t.setMergePairs(pairs)
		} else if len(v.Merges) > 0 {
			if err := t.setMerges(v.Merges); err != nil {
				return nil, err
			}
		}
	case "gpt2":
		t.kind = kindByteBPE
		t.addSpacePrefix = false
		if len(pairs) > 0 {
			t.setMergePairs(pairs)
		} else if err := t.setMerges(v.Merges); err != nil {
			return nil, err
		}
		pre, ignore, err := newPretokenizer(v.Pre)
		if err != nil {
			return nil, err
		}
		t.pre, t.ignoreMerges = pre, ignore
	case "":
		return nil, fmt.Errorf("tokenizer: %w: no tokenizer model named", ErrBadVocab)
	default:
		return nil, fmt.Errorf("tokenizer: %w: unsupported tokenizer model %q (want llama or gpt2)", ErrBadVocab, v.Model)
	}
	t.finish()
	return t, nil
}

// setMerges parses "left right" rules, highest priority first.
func (t *tok) setMerges(rules []string) error {
	if len(rules) == 0 {
		return fmt.Errorf("tokenizer: %w: byte-level BPE without merges", ErrBadVocab)
	}
	t.ranks = make(map[uint64]merge, len(rules))
	for i, r := range rules {
		// llama.cpp splits at the first space after the first byte.
		sp := -1
		if len(r) > 1 {
			if j := strings.IndexByte(r[1:], ' '); j >= 0 {
				sp = j + 1
			}
		}
		if sp < 0 {
			return fmt.Errorf("tokenizer: %w: merge %d %q has no space", ErrBadVocab, i, r)
		}
		t.addMerge(i, r[:sp], r[sp+1:])
	}
	return nil
}

// setMergePairs records merge rules given as (left, right) pairs.
func (t *tok) setMergePairs(pairs [][2]string) {
	t.ranks = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		t.addMerge(i, p[0], p[1])
	}
}

// addMerge records rule rank for left+right; rules whose parts or result
// are not in the vocabulary can never apply and are skipped.
func (t *tok) addMerge(rank int, left, right string) {
	a, okA := t.ids[left]
	b, okB := t.ids[right]
	c, okC := t.ids[left+right]
	if !okA || !okB || !okC {
		return
	}
	k := pairKey(a, b)
	if _, dup := t.ranks[k]; !dup {
		t.ranks[k] = merge{rank: int32(rank), id: c}
	}
}

// finish builds the byte fallback table and the special-token list.
func (t *tok) finish() {
	const hex = "0123456789ABCDEF"
	for b := 0; b < 256; b++ {
		t.byteIDs[b] = -1
		name := string([]byte{'<', '0', 'x', hex[b>>4], hex[b&15], '>'})
		if id, ok := t.ids[name]; ok {
			t.byteIDs[b] = id
		} else if id, ok := t.ids[string([]byte{byte(b)})]; ok && t.kind == kindSPM {
			t.byteIDs[b] = id
		}
	}
	t.specials = t.specials[:0]
	for i, ty := range t.types {
		if (ty == TypeControl || ty == TypeUserDefined || ty == TypeUnknown) && t.pieces[i] != "" {
			t.specials = append(t.specials, int32(i))
		}
	}
	sort.SliceStable(t.specials, func(a, b int) bool {
		return len(t.pieces[t.specials[a]]) > len(t.pieces[t.specials[b]])
	})
}

func (t *tok) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.pieces) {
		return ""
	}
	return t.pieces[id]
}

func (t *tok) VocabSize() int { return len(t.pieces) }
func (t *tok) BOS() int32     { return t.bos }
func (t *tok) EOS() int32     { return t.eos }

// TokenType returns the type of id (TypeNormal, TypeControl, ...), 0 when
// id is out of range.
func TokenType(t Tokenizer, id int32) int32 {
	if tt, ok := t.(*tok); ok && id >= 0 && int(id) < len(tt.types) {
		return tt.types[id]
	}
	return 0
}
