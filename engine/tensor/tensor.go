package tensor

import "fmt"

// Tensor is a read-only weight as it lies in a model file (often a slice of a
// memory-mapped file). Shape is outermost first: a weight matrix is
// [rows, cols] with rows = output features and cols = input features, so
// row r is Data[r*RowBytes : (r+1)*RowBytes]. (GGUF lists dims innermost
// first; its loader reverses them.)
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	Data  []byte
	// Stride is the byte distance between rows; 0 means RowBytes (dense).
	// A column slice of a matrix (a row-parallel shard) is a view with the
	// parent's stride.
	Stride int
	// Scales are the dequantization factors of an F8_E4M3 weight (nil for
	// every other dtype): element (r, c) is E4M3ToF32(byte) * Scales.At(r, c).
	Scales *Scales
}

// Row returns the bytes of row r.
func (t *Tensor) Row(r int) []byte {
	rb := t.RowBytes()
	s := t.Stride
	if s == 0 {
		s = rb
	}
	return t.Data[r*s : r*s+rb]
}

// SliceRows returns rows [r0, r1) as a view (a column-parallel shard).
func (t *Tensor) SliceRows(r0, r1 int) (*Tensor, error) {
	rows := t.Rows()
	if r0 < 0 || r1 > rows || r0 >= r1 || len(t.Shape) != 2 {
		return nil, fmt.Errorf("tensor %q: rows [%d,%d) outside %v", t.Name, r0, r1, t.Shape)
	}
	s := t.Stride
	if s == 0 {
		s = t.RowBytes()
	}
	end := (r1-1)*s + t.RowBytes()
	return &Tensor{Name: t.Name, DType: t.DType, Shape: []int{r1 - r0, t.Cols()}, Data: t.Data[r0*s : end], Stride: s, Scales: t.Scales.view(r0, 0)}, nil
}

// SliceCols returns columns [c0, c1) of every row as a view (a row-parallel
// shard). Both bounds must fall on block boundaries of quantized types.
func (t *Tensor) SliceCols(c0, c1 int) (*Tensor, error) {
	cols := t.Cols()
	if c0 < 0 || c1 > cols || c0 >= c1 || len(t.Shape) != 2 {
		return nil, fmt.Errorf("tensor %q: cols [%d,%d) outside %v", t.Name, c0, c1, t.Shape)
	}
	bs := t.DType.BlockSize()
	if c0%bs != 0 || c1%bs != 0 {
		return nil, fmt.Errorf("tensor %q: %v cols [%d,%d) do not fall on %d-element blocks", t.Name, t.DType, c0, c1, bs)
	}
	s := t.Stride
	if s == 0 {
		s = t.RowBytes()
	}
	off, _ := t.DType.Bytes(c0)
	rb, _ := t.DType.Bytes(c1 - c0)
	rows := t.Rows()
	return &Tensor{Name: t.Name, DType: t.DType, Shape: []int{rows, c1 - c0}, Data: t.Data[off : (rows-1)*s+off+rb], Stride: s, Scales: t.Scales.view(0, c0)}, nil
}

// Elems is the number of elements.
func (t *Tensor) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Rows and Cols view the tensor as a matrix: the last dim is Cols, the rest
// are Rows. A 1-D tensor is one row.
func (t *Tensor) Cols() int {
	if len(t.Shape) == 0 {
		return 1
	}
	return t.Shape[len(t.Shape)-1]
}

func (t *Tensor) Rows() int { return t.Elems() / max(t.Cols(), 1) }

// RowBytes is the storage size of one row.
func (t *Tensor) RowBytes() int {
	n, _ := t.DType.Bytes(t.Cols())
	return n
}

// Check verifies that Data holds exactly the elements that Shape and DType
// say, and that an F8_E4M3 tensor's Scales cover it, so kernels never read
// out of bounds.
func (t *Tensor) Check() error {
	if err := t.CheckBytes(); err != nil {
		return err
	}
	return t.checkScales()
}

// CheckBytes is Check without the scales (an F8_E4M3 tensor as a file
// holds it, before its scales are attached).
func (t *Tensor) CheckBytes() error {
	for _, d := range t.Shape {
		if d <= 0 {
			return fmt.Errorf("tensor %q: bad shape %v", t.Name, t.Shape)
		}
	}
	rb, err := t.DType.Bytes(t.Cols())
	if err != nil {
		return fmt.Errorf("tensor %q: shape %v: %w", t.Name, t.Shape, err)
	}
	if t.Stride != 0 {
		if t.Stride < rb || (t.Rows()-1)*t.Stride+rb > len(t.Data) {
			return fmt.Errorf("tensor %q: stride %d does not fit %d bytes", t.Name, t.Stride, len(t.Data))
		}
		return nil
	}
	if want := rb * t.Rows(); want != len(t.Data) {
		return fmt.Errorf("tensor %q: %v %v needs %d bytes, have %d", t.Name, t.DType, t.Shape, want, len(t.Data))
	}
	return nil
}

// ExpectShape returns an error naming the tensor when its shape differs.
func (t *Tensor) ExpectShape(shape ...int) error {
	if len(shape) != len(t.Shape) {
		return fmt.Errorf("tensor %q: shape %v, want %v", t.Name, t.Shape, shape)
	}
	for i := range shape {
		if shape[i] != t.Shape[i] {
			return fmt.Errorf("tensor %q: shape %v, want %v", t.Name, t.Shape, shape)
		}
	}
	return nil
}
