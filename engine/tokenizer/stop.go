package tokenizer

import "strings"

// Stopper applies stop strings to streamed text: it passes text on as soon
// as no stop string can start in it, holds back the tail that could be the
// start of one, and cuts the text where the first one completes, whatever
// token boundaries it spans. The zero Stopper passes everything through.
type Stopper struct {
	stops []string
	held  string // a suffix of the text so far that is a prefix of a stop string
}

// NewStopper applies stops (none empty: the caller checks).
func NewStopper(stops []string) *Stopper { return &Stopper{stops: stops} }

// Feed adds piece and returns the text now safe to emit; hit is true when
// a stop string completed, and out ends just before it. A stop string that
// completed is not cut at while a longer one that starts earlier may still
// complete: the text is cut at the earliest start of any stop string, as
// if the whole text had been searched at once.
func (s *Stopper) Feed(piece string) (out string, hit bool) {
	if len(s.stops) == 0 {
		return piece, false
	}
	buf := s.held + piece
	cut := s.firstMatch(buf)
	open := s.firstOpen(buf)
	if cut >= 0 && (open < 0 || open > cut) {
		s.held = ""
		return buf[:cut], true
	}
	if open < 0 {
		s.held = ""
		return buf, false
	}
	s.held = buf[open:]
	return buf[:open], false
}

// Flush returns the held text once the generation ends, cut at the first
// stop string it holds (hit), which an earlier-starting prefix kept open.
func (s *Stopper) Flush() (string, bool) {
	h := s.held
	s.held = ""
	if cut := s.firstMatch(h); cut >= 0 {
		return h[:cut], true
	}
	return h, false
}

// firstMatch is where the earliest complete stop string in buf starts, or
// -1.
func (s *Stopper) firstMatch(buf string) int {
	cut := -1
	for _, st := range s.stops {
		if i := strings.Index(buf, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	return cut
}

// firstOpen is the earliest start in buf of a stop string that buf's end
// cuts short (buf[i:] a proper prefix of it: more text may complete it),
// or -1.
func (s *Stopper) firstOpen(buf string) int {
	for i := max(0, len(buf)-s.longest()+1); i < len(buf); i++ {
		for _, st := range s.stops {
			if len(buf)-i < len(st) && strings.HasPrefix(st, buf[i:]) {
				return i
			}
		}
	}
	return -1
}

func (s *Stopper) longest() int {
	n := 0
	for _, st := range s.stops {
		n = max(n, len(st))
	}
	return n
}
