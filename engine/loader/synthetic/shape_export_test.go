package synthetic

// ShapeOf is the shape src generates for a tensor name, without
// generating it (for synthetic_test); false when it has no such tensor.
func ShapeOf(src *Source, name string) ([]int, bool) { return src.shape(name) }
