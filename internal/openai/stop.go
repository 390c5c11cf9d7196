package openai

import "strings"

// stopper applies stop strings to streamed text: it passes text on as soon
// as no stop string can start in it, holds back the tail that could be the
// start of one, and cuts the text where the first one completes, whatever
// token boundaries it spans.
type stopper struct {
	stops []string
	held  string // a suffix of the text so far that is a prefix of a stop string
}

// feed adds piece and returns the text now safe to emit; hit is true when
// a stop string completed, and out ends just before it.
func (s *stopper) feed(piece string) (out string, hit bool) {
	if len(s.stops) == 0 {
		return piece, false
	}
	buf := s.held + piece
	cut := -1
	for _, st := range s.stops {
		if i := strings.Index(buf, st); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		s.held = ""
		return buf[:cut], true
	}
	keep := 0
	for _, st := range s.stops {
		for n := min(len(st)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, st[:n]) {
				keep = n
				break
			}
		}
	}
	s.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the held text once the generation ends without a stop.
func (s *stopper) flush() string {
	h := s.held
	s.held = ""
	return h
}
