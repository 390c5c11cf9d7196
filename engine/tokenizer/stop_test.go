package tokenizer

import (
	"strings"
	"testing"
)

// reference cuts text at the earliest occurrence of any stop string.
func reference(text string, stops []string) (string, bool) {
	cut := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return text, false
	}
	return text[:cut], true
}

// feedAll feeds pieces until a stop, as a generation does.
func feedAll(pieces []string, stops []string) (string, bool) {
	s := NewStopper(stops)
	var sb strings.Builder
	for _, p := range pieces {
		out, hit := s.Feed(p)
		sb.WriteString(out)
		if hit {
			return sb.String(), true
		}
	}
	rest, hit := s.Flush()
	return sb.String() + rest, hit
}

func TestStopper(t *testing.T) {
	cases := []struct {
		pieces, stops []string
		want          string
		hit           bool
	}{
		{[]string{"Hel", "lo ", "wo", "rld"}, []string{"o w"}, "Hell", true},
		{[]string{"ab", "c"}, []string{"bc", "abcd"}, "a", true},
		{[]string{"a", "b", "a", "b", "c"}, []string{"abc"}, "ab", true},
		{[]string{"x", "y"}, []string{"yz"}, "xy", false},
		{[]string{"", "end", ""}, []string{"\n\n"}, "end", false},
		{[]string{"日本", "語です"}, []string{"本語"}, "日", true},
		{[]string{"abc"}, nil, "abc", false},
		{[]string{"o", " ", "w"}, []string{"o w", " "}, "", true},  // the longer stop starts first
		{[]string{"o", " ", "x"}, []string{"o w", " "}, "o", true}, // it fails: cut at the shorter
		{[]string{"o", " "}, []string{"o w", " "}, "o", true},      // the text ends first: cut at flush
	}
	for _, c := range cases {
		got, hit := feedAll(c.pieces, c.stops)
		if got != c.want || hit != c.hit {
			t.Errorf("%q stop %q: %q %v, want %q %v", c.pieces, c.stops, got, hit, c.want, c.hit)
		}
	}
}

// FuzzStopper: however the text is split into pieces, the stopper's output
// is the text cut at the first stop string.
func FuzzStopper(f *testing.F) {
	f.Add("Hello world", "o w", "ld", uint64(0x1234))
	f.Add("aaaab", "aab", "b", uint64(7))
	f.Fuzz(func(t *testing.T, text, s1, s2 string, splits uint64) {
		var stops []string
		for _, s := range []string{s1, s2} {
			if s != "" {
				stops = append(stops, s)
			}
		}
		var pieces []string
		rest := text
		for rest != "" {
			n := 1 + int(splits%4)
			splits = splits/4 + 1
			n = min(n, len(rest))
			pieces = append(pieces, rest[:n])
			rest = rest[n:]
		}
		got, hit := feedAll(pieces, stops)
		want, wantHit := reference(text, stops)
		if got != want || hit != wantHit {
			t.Errorf("%q in %q, stops %q: %q %v, want %q %v", text, pieces, stops, got, hit, want, wantHit)
		}
	})
}
