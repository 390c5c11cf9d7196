package gguf

import (
	"fmt"

	"rigscope/engine/tensor"
)

// GGMLType is a tensor element type id as ggml numbers them.
type GGMLType uint32

// The ggml type ids this package knows. Only those with a tensor.DType
// (see ggmlToDType) can be handed out as tensors; the others are recognised
// so that their storage size can be checked and a clear error given.
const (
	TypeF32  GGMLType = 0
	TypeF16  GGMLType = 1
	TypeQ4_0 GGMLType = 2
	TypeQ8_0 GGMLType = 8
	TypeQ4_K GGMLType = 12
	TypeQ5_K GGMLType = 13
	TypeQ6_K GGMLType = 14
	TypeBF16 GGMLType = 30
)

// ggmlTypeInfo is the name and block geometry of a ggml type
// (elements per block, bytes per block), as ggml's type_traits state them.
type ggmlTypeInfo struct {
	name       string
	blockElems int
	blockBytes int
}

var ggmlTypes = map[GGMLType]ggmlTypeInfo{
	0:  {"F32", 1, 4},
	1:  {"F16", 1, 2},
	2:  {"Q4_0", 32, 18},
	3:  {"Q4_1", 32, 20},
	6:  {"Q5_0", 32, 22},
	7:  {"Q5_1", 32, 24},
	8:  {"Q8_0", 32, 34},
	9:  {"Q8_1", 32, 36},
	10: {"Q2_K", 256, 84},
	11: {"Q3_K", 256, 110},
	12: {"Q4_K", 256, 144},
	13: {"Q5_K", 256, 176},
	14: {"Q6_K", 256, 210},
	15: {"Q8_K", 256, 292},
	16: {"IQ2_XXS", 256, 66},
	17: {"IQ2_XS", 256, 74},
	18: {"IQ3_XXS", 256, 98},
	19: {"IQ1_S", 256, 50},
	20: {"IQ4_NL", 32, 18},
	21: {"IQ3_S", 256, 110},
	22: {"IQ2_S", 256, 82},
	23: {"IQ4_XS", 256, 136},
	24: {"I8", 1, 1},
	25: {"I16", 1, 2},
	26: {"I32", 1, 4},
	27: {"I64", 1, 8},
	28: {"F64", 1, 8},
	29: {"IQ1_M", 256, 56},
	30: {"BF16", 1, 2},
	34: {"TQ1_0", 256, 54},
	35: {"TQ2_0", 256, 66},
	39: {"MXFP4", 32, 17},
}

var ggmlToDType = map[GGMLType]tensor.DType{
	TypeF32:  tensor.F32,
	TypeF16:  tensor.F16,
	TypeQ4_0: tensor.Q4_0,
	TypeQ8_0: tensor.Q8_0,
	TypeQ4_K: tensor.Q4_K,
	TypeQ5_K: tensor.Q5_K,
	TypeQ6_K: tensor.Q6_K,
	TypeBF16: tensor.BF16,
}

func (t GGMLType) String() string {
	if ti, ok := ggmlTypes[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("ggml type %d", uint32(t))
}

// Supported reports whether tensors of this type can be loaded.
func (t GGMLType) Supported() bool {
	_, ok := ggmlToDType[t]
	return ok
}

// GGMLTypeOf returns the ggml type id of a tensor dtype.
func GGMLTypeOf(d tensor.DType) (GGMLType, error) {
	for g, dt := range ggmlToDType {
		if dt == d {
			return g, nil
		}
	}
	return 0, fmt.Errorf("dtype %v has no ggml type", d)
}

func supportedTypeNames() string {
	return "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K"
}
