package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"rigscope/engine/tensor"
)

var dtypeNames = map[tensor.DType]string{tensor.F32: "F32", tensor.F16: "F16", tensor.BF16: "BF16", tensor.F8_E4M3: "F8_E4M3"}

// Write writes tensors (F32, F16, BF16 or F8_E4M3) as a safetensors file,
// in order, with the given __metadata__ (may be nil). An F8_E4M3 tensor's
// bytes are written alone: its Scales are tensors of their own, as the
// caller names them.
func Write(w io.Writer, tensors []*tensor.Tensor, metadata map[string]string) error {
	hdr := map[string]any{}
	if metadata != nil {
		hdr["__metadata__"] = metadata
	}
	var off uint64
	for _, t := range tensors {
		if err := t.CheckBytes(); err != nil {
			return fmt.Errorf("safetensors: write: %w", err)
		}
		name, ok := dtypeNames[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: write: tensor %q: dtype %v not supported", t.Name, t.DType)
		}
		if _, dup := hdr[t.Name]; dup {
			return fmt.Errorf("safetensors: write: tensor %q appears twice", t.Name)
		}
		end := off + uint64(len(t.Data))
		hdr[t.Name] = map[string]any{"dtype": name, "shape": t.Shape, "data_offsets": []uint64{off, end}}
		off = end
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	for len(js)%8 != 0 { // the reference writer pads the header with spaces
		js = append(js, ' ')
	}
	bw := bufio.NewWriter(w)
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(js)))
	bw.Write(n[:])
	bw.Write(js)
	for _, t := range tensors {
		bw.Write(t.Data)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}
