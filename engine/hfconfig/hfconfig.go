// Package hfconfig reads what a Hugging Face config.json says about a
// Llama-style decoder: its sizes, attention shape and RoPE, and every
// field that asks for something the engine does not implement (Check).
// The model loader (engine/loader) and the EAGLE-3 head
// (engine/spec/eagle3) embed Fields in their own config structs and add
// the fields only they read.
package hfconfig

import (
	"encoding/json"
	"fmt"
	"math"

	"rigscope/engine/model"
)

// Fields are the config.json fields both readers share.
type Fields struct {
	Architectures  []string        `json:"architectures"`
	HiddenSize     int             `json:"hidden_size"`
	Intermediate   int             `json:"intermediate_size"`
	Heads          int             `json:"num_attention_heads"`
	KVHeads        *int            `json:"num_key_value_heads"`
	HeadDim        *int            `json:"head_dim"`
	Layers         *int            `json:"num_hidden_layers"`
	HiddenAct      string          `json:"hidden_act"`
	RMSNormEps     *float64        `json:"rms_norm_eps"`
	RopeTheta      *float64        `json:"rope_theta"`
	RopeScaling    json.RawMessage `json:"rope_scaling"`
	RopeParameters json.RawMessage `json:"rope_parameters"`
	MaxPos         *int            `json:"max_position_embeddings"`
	OrigMaxPos     *float64        `json:"original_max_position_embeddings"` // top level (Phi-3 style); YaRN's original context when stated
	VocabSize      int             `json:"vocab_size"`
}

// Shape is the attention shape: num_key_value_heads (default: the query
// heads) and head_dim (default: hidden_size / heads, which must divide).
func (f *Fields) Shape() (kvHeads, headDim int, err error) {
	kvHeads = f.Heads
	if f.KVHeads != nil {
		kvHeads = *f.KVHeads
	}
	switch {
	case f.HeadDim != nil:
		headDim = *f.HeadDim
	case f.Heads > 0 && f.HiddenSize%f.Heads != 0:
		return 0, 0, fmt.Errorf("hidden_size %d is not divisible by num_attention_heads %d, and there is no head_dim", f.HiddenSize, f.Heads)
	case f.Heads > 0:
		headDim = f.HiddenSize / f.Heads
	}
	return kvHeads, headDim, nil
}

// NormEps is rms_norm_eps, or def when absent; a stated value must pass
// model.CheckNormEps.
func (f *Fields) NormEps(def float32) (float32, error) {
	if f.RMSNormEps == nil {
		return def, nil
	}
	if err := model.CheckNormEps(*f.RMSNormEps); err != nil {
		return 0, fmt.Errorf("rms_norm_eps: %w", err)
	}
	return float32(*f.RMSNormEps), nil
}

// Context is max_position_embeddings, or def when absent; a stated value
// must pass model.CheckContext.
func (f *Fields) Context(def int) (int, error) {
	if f.MaxPos == nil {
		return def, nil
	}
	if err := model.CheckContext(*f.MaxPos); err != nil {
		return 0, fmt.Errorf("max_position_embeddings: %w", err)
	}
	return *f.MaxPos, nil
}

// ropeParams is rope_parameters or rope_scaling (older files say "type").
type ropeParams struct {
	RopeTheta      *float64 `json:"rope_theta"`
	RopeType       string   `json:"rope_type"`
	Type           string   `json:"type"`
	Factor         *float64 `json:"factor"`
	LowFreqFactor  *float64 `json:"low_freq_factor"`
	HighFreqFactor *float64 `json:"high_freq_factor"`
	OrigContext    *float64 `json:"original_max_position_embeddings"` // a count, but JSON may say 8192.0

	yarnParams // yarn.go
}

// ScalingTypes are the RoPE scaling types Scaling reads.
var ScalingTypes = []string{"linear", "llama3", "yarn"}

// Scaling is the RoPE scaling that rope_parameters (transformers 5) or
// rope_scaling (transformers 4) states: linear (factor) or llama3 (factor,
// low_freq_factor, high_freq_factor, original_max_position_embeddings,
// each required). Plain RoPE and any other type read as none: CheckFor
// refuses a type not in ScalingTypes. Both spellings stated must agree. A
// field of the wrong JSON type is an error, never read as no scaling.
func (f *Fields) Scaling() (model.RopeScaling, error) {
	var got []model.RopeScaling
	var from []string
	for _, sp := range []struct {
		field string
		raw   json.RawMessage
	}{{"rope_parameters", f.RopeParameters}, {"rope_scaling", f.RopeScaling}} {
		if !present(sp.raw) {
			continue
		}
		var rp ropeParams
		if err := json.Unmarshal(sp.raw, &rp); err != nil {
			return model.RopeScaling{}, fmt.Errorf("%s: %w", sp.field, err)
		}
		s, err := rp.scaling(sp.field, f)
		if err != nil {
			return model.RopeScaling{}, err
		}
		if s.Type != model.RopeScaleNone {
			got, from = append(got, s), append(from, sp.field)
		}
	}
	switch {
	case len(got) == 0:
		return model.RopeScaling{}, nil
	case len(got) == 2 && got[0] != got[1]:
		return model.RopeScaling{}, fmt.Errorf("rope_parameters (%v) and rope_scaling (%v) disagree", got[0], got[1])
	}
	if err := got[0].Check(); err != nil {
		return model.RopeScaling{}, fmt.Errorf("%s: %w", from[0], err)
	}
	return got[0], nil
}

func (rp *ropeParams) scaling(field string, f *Fields) (model.RopeScaling, error) {
	typ := rp.RopeType
	if typ == "" {
		typ = rp.Type
	}
	var s model.RopeScaling
	switch typ {
	case "linear":
		s.Type = model.RopeScaleLinear
	case "llama3":
		s.Type = model.RopeScaleLlama3
	case "yarn":
		return rp.yarn(field, f)
	default:
		return s, nil
	}
	var missing []string
	for _, m := range []struct {
		name string
		v    *float64
		dst  *float32
		used bool
	}{
		{"factor", rp.Factor, &s.Factor, true},
		{"low_freq_factor", rp.LowFreqFactor, &s.LowFreqFactor, s.Type == model.RopeScaleLlama3},
		{"high_freq_factor", rp.HighFreqFactor, &s.HighFreqFactor, s.Type == model.RopeScaleLlama3},
	} {
		if !m.used {
			continue
		}
		if m.v == nil {
			missing = append(missing, m.name)
		} else {
			*m.dst = float32(*m.v)
		}
	}
	if s.Type == model.RopeScaleLlama3 {
		switch n := rp.OrigContext; {
		case n == nil:
			missing = append(missing, "original_max_position_embeddings")
		case *n != math.Trunc(*n) || *n < 0 || *n > model.MaxContext:
			return s, fmt.Errorf("%s: original_max_position_embeddings %g is not a whole number of positions between 1 and %d", field, *n, model.MaxContext)
		default:
			s.OrigContext = int(*n)
		}
	}
	if len(missing) > 0 {
		return s, fmt.Errorf("%s: %s RoPE scaling without %v; a %s scaling states them all", field, typ, missing, typ)
	}
	return s, nil
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// RopeBase is the RoPE base: rope_theta at the top level (transformers 4)
// or in rope_parameters (transformers 5), def when neither states it. A
// stated value must pass model.CheckRopeTheta; both stated must agree.
func (f *Fields) RopeBase(def float32) (float32, error) {
	var rp ropeParams
	if present(f.RopeParameters) {
		if err := json.Unmarshal(f.RopeParameters, &rp); err != nil {
			return 0, fmt.Errorf("rope_parameters: %w", err)
		}
	}
	v, field := 0.0, ""
	switch {
	case f.RopeTheta != nil && rp.RopeTheta != nil && *f.RopeTheta != *rp.RopeTheta:
		return 0, fmt.Errorf("rope_theta %g and rope_parameters.rope_theta %g disagree", *f.RopeTheta, *rp.RopeTheta)
	case f.RopeTheta != nil:
		v, field = *f.RopeTheta, "rope_theta"
	case rp.RopeTheta != nil:
		v, field = *rp.RopeTheta, "rope_parameters.rope_theta"
	default:
		return def, nil
	}
	if err := model.CheckRopeTheta(v); err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return float32(v), nil
}
