package widgets

// Series is a fixed-capacity ring of float64 (NaN marks a gap): Push
// overwrites the oldest value once full, so a chart fed for hours holds
// the same memory as after its first minute.
type Series struct {
	buf   []float64 // (capacity) storage, oldest at start
	start int
	n     int
}

// NewSeries holds at most capacity values (min 1).
func NewSeries(capacity int) *Series {
	return &Series{buf: make([]float64, max(capacity, 1))}
}

// Push appends v, dropping the oldest value when full.
func (s *Series) Push(v float64) {
	if s.n < len(s.buf) {
		s.buf[(s.start+s.n)%len(s.buf)] = v
		s.n++
		return
	}
	s.buf[s.start] = v
	s.start = (s.start + 1) % len(s.buf)
}

// Len is the number of values held.
func (s *Series) Len() int { return s.n }

// Reset empties the series, keeping its storage.
func (s *Series) Reset() { s.start, s.n = 0, 0 }

// Values copies the values oldest first into dst[:0] and returns it.
func (s *Series) Values(dst []float64) []float64 {
	dst = dst[:0]
	for i := 0; i < s.n; i++ {
		dst = append(dst, s.buf[(s.start+i)%len(s.buf)])
	}
	return dst
}
