package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// fragment is a piece of the input: raw text, or a special token found in it.
type fragment struct {
	text  string
	token int32 // -1 for text
	first bool  // text fragment at the start of the input
}

// Encode tokenizes text. Special tokens (control, user-defined, unknown)
// written in text are recognized first, longest first, as llama.cpp does
// with parse_special and Hugging Face does with added tokens.
func (t *tok) Encode(text string, addSpecial bool) []int32 {
	out := make([]int32, 0, len(text)/3+2)
	if addSpecial && t.addBOS {
		out = append(out, t.bos)
	}
	var frags []fragment
	if text != "" {
		frags = t.partition(text)
	}
	prevSpecial := true
	for _, f := range frags {
		if f.token >= 0 {
			out = append(out, f.token)
			prevSpecial = true
			continue
		}
		switch t.kind {
		case kindSPM:
			s := f.text
			if t.addSpacePrefix && prevSpecial && (!t.prefixFirstOnly || f.first) {
				s = " " + s
			}
			out = t.encodeSPM(strings.ReplaceAll(s, " ", "▁"), out)
		case kindByteBPE:
			out = t.encodeByteBPE(f.text, out)
		}
		prevSpecial = false
	}
	if addSpecial && t.addEOS {
		out = append(out, t.eos)
	}
	return out
}

// partition splits text around occurrences of special tokens, trying each
// special token in turn (longest first) on the remaining text fragments.
func (t *tok) partition(text string) []fragment {
	frags := []fragment{{text: text, token: -1, first: true}}
	for _, id := range t.specials {
		piece := t.pieces[id]
		if !strings.Contains(text, piece) {
			continue
		}
		next := make([]fragment, 0, len(frags)+2)
		for _, f := range frags {
			if f.token >= 0 {
				next = append(next, f)
				continue
			}
			s, first := f.text, f.first
			for {
				i := strings.Index(s, piece)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{text: s[:i], token: -1, first: first})
				}
				next = append(next, fragment{token: id})
				s, first = s[i+len(piece):], false
			}
			if s != "" {
				next = append(next, fragment{text: s, token: -1, first: first})
			}
		}
		frags = next
	}
	return frags
}

// symbol is one node of the doubly linked list BPE merges.
type symbol struct {
	start, end int   // byte range in the word
	prev, next int   // neighbours, -1 at the ends
	id         int32 // vocabulary id of word[start:end], -1 when none
}

// bigram is a candidate merge of symbols left and left's next.
type bigram struct {
	left, right int
	score       float32 // higher merges first
	size        int     // bytes of the merged text, to detect stale entries
}

// bigramHeap is a max-heap of bigrams (best merge first), written out
// rather than through container/heap to avoid boxing every push.
type bigramHeap []bigram

func (h bigramHeap) less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score > h[j].score
	}
	return h[i].left < h[j].left
}

func (h *bigramHeap) push(b bigram) {
	*h = append(*h, b)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// bpe merges the characters of word into vocabulary pieces and returns the
// final symbols. Pairs merge by score (SentencePiece) or by rank when the
// vocabulary has merge rules; ties go to the leftmost pair.
func (t *tok) bpe(word string, syms []symbol) []symbol {
	syms = syms[:0]
	for off := 0; off < len(word); {
		_, n := utf8.DecodeRuneInString(word[off:])
		if n == 0 {
			n = 1
		}
		id, ok := t.ids[word[off:off+n]]
		if !ok {
			id = -1
		}
		syms = append(syms, symbol{start: off, end: off + n, prev: len(syms) - 1, next: len(syms) + 1, id: id})
		off += n
	}
	if len(syms) == 0 {
		return syms
	}
	syms[len(syms)-1].next = -1
	h := make(bigramHeap, 0, len(syms))
	try := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		a, b := &syms[l], &syms[r]
		var bg bigram
		if t.ranks != nil {
			if a.id < 0 || b.id < 0 {
				return
			}
			m, ok := t.ranks[pairKey(a.id, b.id)]
			if !ok {
				return
			}
			bg = bigram{left: l, right: r, score: -float32(m.rank), size: b.end - a.start}
		} else {
			id, ok := t.ids[word[a.start:b.end]]
			if !ok {
				return
			}
			bg = bigram{left: l, right: r, score: t.scores[id], size: b.end - a.start}
		}
		h.push(bg)
	}
	for i := 1; i < len(syms); i++ {
		try(i-1, i)
	}
	for len(h) > 0 {
		bg := h.pop()
		a, b := &syms[bg.left], &syms[bg.right]
		if a.end <= a.start || b.end <= b.start || a.next != bg.right || b.end-a.start != bg.size {
			continue // stale: one side was merged since
		}
		if t.ranks != nil {
			a.id = t.ranks[pairKey(a.id, b.id)].id
		} else {
			a.id = t.ids[word[a.start:b.end]]
		}
		a.end = b.end
		b.start = b.end // mark dead
		a.next = b.next
		if b.next >= 0 {
			syms[b.next].prev = bg.left
		}
		try(a.prev, bg.left)
		try(bg.left, a.next)
	}
	return syms
}

// encodeSPM tokenizes one "▁"-escaped text fragment; characters that form
// no piece fall back to <0xNN> byte pieces (or UNK without them).
func (t *tok) encodeSPM(text string, out []int32) []int32 {
	if t.splitOnSpace {
		for len(text) > 0 {
			j := strings.Index(text[1:], "▁")
			if j < 0 {
				return t.encodeSPMWord(text, out)
			}
			out = t.encodeSPMWord(text[:j+1], out)
			text = text[j+1:]
		}
		return out
	}
	return t.encodeSPMWord(text, out)
}

func (t *tok) encodeSPMWord(word string, out []int32) []int32 {
	syms := t.bpe(word, make([]symbol, 0, len(word)))
	for i := 0; i >= 0 && len(syms) > 0; i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		unk := false
		for j := s.start; j < s.end; j++ {
			if id := t.byteIDs[word[j]]; id >= 0 {
				out = append(out, id)
			} else if t.unk >= 0 && !unk {
				out = append(out, t.unk) // one UNK per character, as SentencePiece without byte fallback
				unk = true
			}
		}
	}
	return out
}

// encodeByteBPE tokenizes one text fragment with the pre-tokenizer and
// byte-level BPE.
func (t *tok) encodeByteBPE(text string, out []int32) []int32 {
	var syms []symbol
	for _, w := range t.pre.split(text) {
		word := byteEncode(w)
		if t.ignoreMerges {
			if id, ok := t.ids[word]; ok {
				out = append(out, id)
				continue
			}
		}
		syms = t.bpe(word, syms)
		for i := 0; i >= 0 && len(syms) > 0; i = syms[i].next {
			s := syms[i]
			if s.id >= 0 {
				out = append(out, s.id)
				continue
			}
			// As llama.cpp: try each byte of the symbol as a token.
			for j := s.start; j < s.end; j++ {
				if id, ok := t.ids[word[j:j+1]]; ok {
					out = append(out, id)
				}
			}
		}
	}
	return out
}
