package gpu

// Ring is a fixed-capacity ring buffer: Push overwrites the oldest element
// once full, so memory stays flat however long a session runs. Not safe for
// concurrent use; callers hold their own lock.
type Ring[T any] struct {
	buf   []T // (capacity) storage; buf[(start+i)%cap] is the i-th oldest
	start int
	n     int
}

// NewRing returns an empty ring holding at most capacity elements (min 1).
func NewRing[T any](capacity int) *Ring[T] {
	if capacity < 1 {
		capacity = 1
	}
	return &Ring[T]{buf: make([]T, capacity)}
}

// Push appends v, dropping the oldest element when full.
func (r *Ring[T]) Push(v T) {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = v
		r.n++
		return
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
}

// Len is the number of elements held.
func (r *Ring[T]) Len() int { return r.n }

// Cap is the capacity.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// At returns the i-th oldest element (0 <= i < Len).
func (r *Ring[T]) At(i int) T { return r.buf[(r.start+i)%len(r.buf)] }

// Last returns the newest element and whether there is one.
func (r *Ring[T]) Last() (T, bool) {
	if r.n == 0 {
		var zero T
		return zero, false
	}
	return r.At(r.n - 1), true
}

// AppendTo appends the elements oldest first to dst and returns it.
func (r *Ring[T]) AppendTo(dst []T) []T {
	for i := 0; i < r.n; i++ {
		dst = append(dst, r.At(i))
	}
	return dst
}
