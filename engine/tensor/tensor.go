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
// say, so kernels never read out of bounds.
func (t *Tensor) Check() error {
	for _, d := range t.Shape {
		if d <= 0 {
			return fmt.Errorf("tensor %q: bad shape %v", t.Name, t.Shape)
		}
	}
	rb, err := t.DType.Bytes(t.Cols())
	if err != nil {
		return fmt.Errorf("tensor %q: shape %v: %w", t.Name, t.Shape, err)
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
