package ui

import "strings"

// textBlock is a byte range of an answer shown as one block: prose, or the
// body of a fenced code block (``` lines), shown in a monospace font.
type textBlock struct {
	start, end int // [start, end) of the answer's text
	code       bool
	lang       string // the info string after the opening fence
}

// splitBlocks cuts text into prose and fenced code blocks (CommonMark
// fences of three or more backticks, indented at most three spaces; an
// unclosed fence runs to the end). Fence lines belong to no block. Prose
// longer than maxChars is cut at line ends so a long answer stays in
// several blocks (see blockChars).
func splitBlocks(text string, maxChars int) []textBlock {
	var out []textBlock
	add := func(b textBlock) {
		if b.end <= b.start {
			return
		}
		if b.code || maxChars <= 0 {
			out = append(out, b)
			return
		}
		for b.end-b.start > maxChars {
			cut := strings.LastIndexByte(text[b.start:b.start+maxChars], '\n')
			if cut <= 0 {
				cut = maxChars
			} else {
				cut++ // keep the newline in the first piece
			}
			out = append(out, textBlock{start: b.start, end: b.start + cut})
			b.start += cut
		}
		out = append(out, b)
	}
	cur := textBlock{}
	inCode := false
	fence := ""
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		next := len(text)
		if end >= 0 {
			next = pos + end + 1
		}
		line := text[pos:next]
		trimmed := strings.TrimLeft(line, " ")
		isFence := len(line)-len(trimmed) <= 3 && strings.HasPrefix(trimmed, "```")
		switch {
		case !inCode && isFence:
			cur.end = pos
			add(cur)
			n := len(trimmed) - len(strings.TrimLeft(trimmed, "`"))
			fence = strings.Repeat("`", n)
			inCode = true
			cur = textBlock{start: next, code: true, lang: strings.TrimSpace(trimmed[n:])}
		case inCode && isFence && closesFence(trimmed, fence):
			cur.end = pos
			if cur.end > cur.start && text[cur.end-1] == '\n' {
				cur.end-- // the code's last newline is the fence's
			}
			add(cur)
			inCode = false
			cur = textBlock{start: next}
		}
		pos = next
	}
	cur.end = len(text)
	add(cur)
	return out
}

// spansIn returns the parts of spans (laid end to end from offset 0) that
// fall inside [start, end).
func spansIn(spans []span, start, end int) []span {
	var out []span
	at := 0
	for _, s := range spans {
		a, b := at, at+len(s.text)
		at = b
		lo, hi := max(a, start), min(b, end)
		if lo >= hi {
			continue
		}
		out = append(out, span{text: s.text[lo-a : hi-a], draft: s.draft})
	}
	return out
}

// closesFence says whether a fence line (leading spaces trimmed) closes a
// code block opened by fence: backticks only, at least as many.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, "`") == ""
}
