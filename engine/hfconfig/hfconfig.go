// Package hfconfig reads what a Hugging Face config.json says about a
// Llama-style decoder: its sizes, attention shape and RoPE. The model
// loader (engine/loader) and the EAGLE-3 head (engine/spec/eagle3) embed
// Fields in their own config structs and add the fields only they read.
package hfconfig

import (
	"encoding/json"
	"fmt"
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
	MaxPos         int             `json:"max_position_embeddings"`
	VocabSize      int             `json:"vocab_size"`
}

// Shape is the attention shape: num_key_value_heads (default: the query
// heads) and head_dim (default: hidden_size / heads, 0 without heads).
func (f *Fields) Shape() (kvHeads, headDim int) {
	kvHeads = f.Heads
	if f.KVHeads != nil {
		kvHeads = *f.KVHeads
	}
	if f.HeadDim != nil {
		headDim = *f.HeadDim
	} else if f.Heads > 0 {
		headDim = f.HiddenSize / f.Heads
	}
	return kvHeads, headDim
}

// NormEps is rms_norm_eps, or def when absent.
func (f *Fields) NormEps(def float32) float32 {
	if f.RMSNormEps != nil {
		return float32(*f.RMSNormEps)
	}
	return def
}

// ropeParams is rope_parameters or rope_scaling (older files say "type").
type ropeParams struct {
	RopeTheta *float64 `json:"rope_theta"`
	RopeType  string   `json:"rope_type"`
	Type      string   `json:"type"`
}

func present(m json.RawMessage) bool { return len(m) > 0 && string(m) != "null" }

// Rope is the RoPE base (rope_theta at the top level, else in
// rope_parameters as newer transformers write it, else def) and its
// scaling type: rope_scaling's rope_type (or type), else
// rope_parameters' rope_type; "" when neither names one. Callers decide
// what to do with a type other than "" and "default".
func (f *Fields) Rope(def float32) (theta float32, scaling string, err error) {
	var rp ropeParams
	if present(f.RopeParameters) {
		if err := json.Unmarshal(f.RopeParameters, &rp); err != nil {
			return 0, "", fmt.Errorf("rope_parameters: %w", err)
		}
	}
	scaling = rp.RopeType
	if present(f.RopeScaling) {
		var rs ropeParams
		if err := json.Unmarshal(f.RopeScaling, &rs); err != nil {
			return 0, "", fmt.Errorf("rope_scaling: %w", err)
		}
		if scaling = rs.RopeType; scaling == "" {
			scaling = rs.Type
		}
	}
	switch {
	case f.RopeTheta != nil:
		theta = float32(*f.RopeTheta)
	case rp.RopeTheta != nil:
		theta = float32(*rp.RopeTheta)
	default:
		theta = def
	}
	return theta, scaling, nil
}

// Unscaled says whether a RoPE scaling type from Rope means plain RoPE.
func Unscaled(scaling string) bool { return scaling == "" || scaling == "default" }
