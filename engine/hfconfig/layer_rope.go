package hfconfig

import (
	"encoding/json"
	"fmt"

	"rigscope/engine/model"
)

// LayerRope is one layer type's RoPE.
type LayerRope struct {
	Theta   float32 // 0: not stated
	Scaling model.RopeScaling
}

// PerLayerRope reads a rope_parameters keyed by layer type (transformers
// 5 writes {"full_attention": {...}, "sliding_attention": {...}} for Gemma
// 3), each entry checked as Scaling checks a flat one. It returns nil
// when rope_parameters is flat or absent.
func (f *Fields) PerLayerRope() (map[string]LayerRope, error) {
	if !present(f.RopeParameters) {
		return nil, nil
	}
	var nested map[string]json.RawMessage
	if err := json.Unmarshal(f.RopeParameters, &nested); err != nil {
		return nil, fmt.Errorf("rope_parameters: %w", err)
	}
	out := map[string]LayerRope{}
	for k, raw := range nested {
		if len(raw) == 0 || raw[0] != '{' {
			continue // a flat field (rope_theta, rope_type, ...)
		}
		field := "rope_parameters." + k
		var rp ropeParams
		if err := json.Unmarshal(raw, &rp); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		s, err := rp.scaling(field, f)
		if err != nil {
			return nil, err
		}
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		lr := LayerRope{Scaling: s}
		if rp.RopeTheta != nil {
			if err := model.CheckRopeTheta(*rp.RopeTheta); err != nil {
				return nil, fmt.Errorf("%s.rope_theta: %w", field, err)
			}
			lr.Theta = float32(*rp.RopeTheta)
		}
		out[k] = lr
	}
	if len(out) == 0 {
		return nil, nil
	}
	if len(out) != len(nested) {
		return nil, fmt.Errorf("rope_parameters mixes per-layer-type objects with flat fields")
	}
	return out, nil
}
