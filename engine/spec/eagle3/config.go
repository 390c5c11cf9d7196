package eagle3

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"rigscope/engine/hfconfig"
	"rigscope/engine/loader/unsupported"
	"rigscope/engine/model"
	"rigscope/engine/tensor/cpu"
)

// Architectures are the config.json architectures that mark a head
// directory (SpecForge/SGLang's name, then vLLM's).
var Architectures = []string{"LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM"}

// RopeTypes are the rope_scaling types a head may state (the Llama 3.1
// heads state llama3); others (YaRN's attention factor, per-layer RoPE)
// are refused by name.
var RopeTypes = []string{"linear", "llama3"}

// Rope is the head's RoPE table for positions [0, maxPos): the base
// frequency and scaling of its config, the same table on every device.
func (c Config) Rope(maxPos int) *cpu.RopeTable {
	return cpu.NewScaledRopeTable(c.HeadDim, maxPos, c.RopeTheta, c.RopeScaling.Divisors(c.RopeTheta, c.HeadDim))
}

// NumAux is the number of target layers an EAGLE-3 head fuses.
const NumAux = 3

// Config is a head's configuration as config.json states it.
type Config struct {
	Arch       string
	Dim        int // hidden_size: the head's own width
	Heads      int
	KVHeads    int
	HeadDim    int
	FFN        int
	Vocab      int // vocab_size: the target vocabulary the head was trained for
	DraftVocab int // draft_vocab_size (= Vocab when absent)
	// TargetDim is target_hidden_size (= Dim when absent): the width of
	// each fused target feature.
	TargetDim int
	// AuxLayers are the target layers whose output residual streams the
	// head fuses, 0-indexed (id i = the output of decoder layer i, Hugging
	// Face hidden_states[i+1]); nil when the config names none (then
	// Resolve applies SGLang's default).
	AuxLayers []int
	// AuxFrom says where AuxLayers came from and in which convention.
	AuxFrom   string
	NormEps   float32
	RopeTheta float32
	// RopeScaling is the head's rope_scaling (linear or llama3, as the
	// Llama 3.1 heads state it; none for plain RoPE).
	RopeScaling model.RopeScaling
	MaxPos      int
	// NormBeforeResidual (vLLM's norm_before_residual): the residual is
	// hidden_norm(h) rather than h.
	NormBeforeResidual bool
}

// rawConfig is config.json as written by SpecForge, SGLang and vLLM.
type rawConfig struct {
	hfconfig.Fields
	DraftVocabSize     *int  `json:"draft_vocab_size"`
	TargetHiddenSize   *int  `json:"target_hidden_size"`
	NormBeforeResidual *bool `json:"norm_before_residual"`
	// vLLM reads the top-level list; its ids count the embedding output
	// as 0 (id j = the output of layer j-1).
	AuxTop      []int `json:"eagle_aux_hidden_state_layer_ids"`
	EagleConfig *struct {
		// SpecForge and SGLang: id i = the output of layer i.
		Aux    []int `json:"eagle_aux_hidden_state_layer_ids"`
		UseAux *bool `json:"use_aux_hidden_state"`
	} `json:"eagle_config"`
}

// IsHead reports whether path is a directory whose config.json names an
// EAGLE-3 architecture.
func IsHead(path string) bool {
	b, err := os.ReadFile(filepath.Join(path, "config.json"))
	if err != nil {
		return false
	}
	var rc struct {
		Architectures []string `json:"architectures"`
	}
	if json.Unmarshal(b, &rc) != nil {
		return false
	}
	return slices.ContainsFunc(rc.Architectures, func(a string) bool { return slices.Contains(Architectures, a) })
}

// ReadConfig reads dir/config.json.
func ReadConfig(dir string) (Config, error) {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("eagle3: %s: no config.json; an EAGLE-3 head directory holds config.json and model.safetensors", dir)
	}
	if err != nil {
		return Config{}, fmt.Errorf("eagle3: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("eagle3: %s: %w", p, err)
	}
	return c, nil
}

// ParseConfig parses and checks a head's config.json on its own (Resolve
// checks it against a target).
func ParseConfig(b []byte) (Config, error) {
	var rc rawConfig
	if err := json.Unmarshal(b, &rc); err != nil {
		return Config{}, fmt.Errorf("not JSON: %w", err)
	}
	i := slices.IndexFunc(rc.Architectures, func(a string) bool { return slices.Contains(Architectures, a) })
	if i < 0 {
		return Config{}, fmt.Errorf("architectures %q: not an EAGLE-3 head (want one of %s)", rc.Architectures, strings.Join(Architectures, ", "))
	}
	items, err := hfconfig.CheckFor(b, hfconfig.Implemented{RopeTypes: RopeTypes})
	if err != nil {
		return Config{}, err
	}
	if err := unsupported.Refuse("", items); err != nil {
		return Config{}, err
	}
	c := Config{
		Arch: rc.Architectures[i], Dim: rc.HiddenSize, Heads: rc.Heads,
		FFN: rc.Intermediate, Vocab: rc.VocabSize, DraftVocab: rc.VocabSize, TargetDim: rc.HiddenSize,
	}
	if c.NormEps, err = rc.NormEps(1e-5); err != nil {
		return Config{}, err
	}
	if c.MaxPos, err = rc.Context(2048); err != nil {
		return Config{}, err
	}
	if c.RopeTheta, err = rc.RopeBase(10000); err != nil {
		return Config{}, err
	}
	if c.RopeScaling, err = rc.Scaling(); err != nil {
		return Config{}, err
	}
	if c.KVHeads, c.HeadDim, err = rc.Shape(); err != nil {
		return Config{}, err
	}
	if rc.DraftVocabSize != nil {
		c.DraftVocab = *rc.DraftVocabSize
	}
	if rc.TargetHiddenSize != nil {
		c.TargetDim = *rc.TargetHiddenSize
	}
	if rc.NormBeforeResidual != nil {
		c.NormBeforeResidual = *rc.NormBeforeResidual
	}
	switch {
	case rc.Layers != nil && *rc.Layers != 1:
		return Config{}, fmt.Errorf("num_hidden_layers %d: only one-layer EAGLE-3 heads are supported", *rc.Layers)
	case c.Dim <= 0 || c.Heads <= 0 || c.KVHeads <= 0 || c.HeadDim <= 0 || c.FFN <= 0 || c.Vocab <= 0 || c.DraftVocab <= 0 || c.TargetDim <= 0:
		return Config{}, fmt.Errorf("non-positive size: hidden_size %d, heads %d, kv heads %d, head_dim %d, intermediate_size %d, vocab_size %d, draft_vocab_size %d, target_hidden_size %d",
			c.Dim, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Vocab, c.DraftVocab, c.TargetDim)
	case c.Dim > 1<<16 || c.TargetDim > 1<<16 || c.FFN > 1<<18 || c.Heads > 1<<10 || c.Vocab > 1<<24:
		return Config{}, fmt.Errorf("absurd sizes: hidden_size %d, target_hidden_size %d, intermediate_size %d, heads %d, vocab_size %d", c.Dim, c.TargetDim, c.FFN, c.Heads, c.Vocab)
	case c.Heads%c.KVHeads != 0:
		return Config{}, fmt.Errorf("%d attention heads not divisible by %d kv heads", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0:
		return Config{}, fmt.Errorf("head_dim %d is odd; RoPE needs pairs", c.HeadDim)
	case c.DraftVocab > c.Vocab:
		return Config{}, fmt.Errorf("draft_vocab_size %d exceeds vocab_size %d", c.DraftVocab, c.Vocab)
	}
	if ec := rc.EagleConfig; ec != nil && ec.UseAux != nil && !*ec.UseAux {
		return Config{}, errors.New("eagle_config.use_aux_hidden_state is false: heads that read only the last layer (EAGLE-1/2) are not supported")
	}
	return c, c.readAux(rc)
}

// readAux reads the aux layer ids. eagle_config.eagle_aux_hidden_state_layer_ids
// is SpecForge/SGLang's convention (id i = the output of layer i); a
// top-level eagle_aux_hidden_state_layer_ids is vLLM's (id j = Hugging
// Face hidden_states[j] = the output of layer j-1; 0 would be the
// embedding). Both are accepted; given both, they must name the same layers.
func (c *Config) readAux(rc rawConfig) error {
	var sg []int
	if rc.EagleConfig != nil {
		sg = rc.EagleConfig.Aux
	}
	var vl []int
	for _, j := range rc.AuxTop {
		if j == 0 {
			return fmt.Errorf("eagle_aux_hidden_state_layer_ids %v (vLLM convention, id j = output of layer j-1): id 0 is the embedding output, which cannot be captured", rc.AuxTop)
		}
		vl = append(vl, j-1)
	}
	switch {
	case sg != nil && rc.AuxTop != nil && !slices.Equal(sg, vl):
		return fmt.Errorf("eagle_config.eagle_aux_hidden_state_layer_ids %v (SGLang convention: layers %v) and top-level eagle_aux_hidden_state_layer_ids %v (vLLM convention: layers %v) disagree",
			sg, sg, rc.AuxTop, vl)
	case sg != nil:
		c.AuxLayers = slices.Clone(sg)
		c.AuxFrom = fmt.Sprintf("eagle_config.eagle_aux_hidden_state_layer_ids %v (SpecForge/SGLang convention: id i = output of layer i)", sg)
	case rc.AuxTop != nil:
		c.AuxLayers = vl
		c.AuxFrom = fmt.Sprintf("eagle_aux_hidden_state_layer_ids %v (vLLM convention: id j = output of layer j-1)", rc.AuxTop)
	default:
		return nil
	}
	return checkAux(c.AuxLayers, -1, c.AuxFrom)
}

// checkAux checks the layer list: three distinct ids, each a layer of the
// target (layers < 0: the target is not known yet).
func checkAux(aux []int, layers int, from string) error {
	if len(aux) != NumAux {
		return fmt.Errorf("%s: %d aux layers; an EAGLE-3 head fuses exactly %d", from, len(aux), NumAux)
	}
	for i, l := range aux {
		if l < 0 {
			return fmt.Errorf("%s: layer %d is negative", from, l)
		}
		if layers >= 0 && l >= layers {
			return fmt.Errorf("%s: layer %d does not exist in the target, which has %d layers (0..%d)", from, l, layers, layers-1)
		}
		if slices.Contains(aux[:i], l) {
			return fmt.Errorf("%s: layer %d is listed twice", from, l)
		}
	}
	return nil
}

// Resolve checks the head against the target and fills the default aux
// layers (SGLang's [1, L/2-1, L-4] when the config names none). The head
// must have been trained for the target's vocabulary and feature width,
// and every aux layer must exist. ownEmbed says the head ships its own
// embedding (otherwise the target's is used, which must be as wide as the
// head).
func (c *Config) Resolve(target model.Config, ownEmbed bool) error {
	if c.AuxLayers == nil {
		L := target.Layers
		c.AuxLayers = []int{1, L/2 - 1, L - 4}
		c.AuxFrom = fmt.Sprintf("no eagle_aux_hidden_state_layer_ids; SGLang's default for a %d-layer target %v", L, c.AuxLayers)
	}
	switch {
	case c.TargetDim != target.Dim:
		return fmt.Errorf("the head reads features of width %d (target_hidden_size or hidden_size), the target's hidden size is %d: the head was trained for another model", c.TargetDim, target.Dim)
	case c.Vocab != target.Vocab:
		return fmt.Errorf("the head's vocab_size is %d, the target's vocabulary has %d tokens: the head was trained for another model", c.Vocab, target.Vocab)
	case !ownEmbed && c.Dim != target.Dim:
		return fmt.Errorf("the head's hidden_size %d differs from the target's %d and the head has no embed_tokens of its own to replace the target's embedding", c.Dim, target.Dim)
	}
	return checkAux(c.AuxLayers, target.Layers, c.AuxFrom)
}
