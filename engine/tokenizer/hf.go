package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/dlclark/regexp2"

	"rigscope/internal/safefile"
)

// LoadHF loads the tokenizer of a Hugging Face model directory:
// tokenizer.json when present, else tokenizer.model; BOS/EOS and
// add_bos_token/add_eos_token come from tokenizer_config.json.
func LoadHF(dir string) (Tokenizer, error) {
	cfg, err := readHFConfig(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil {
		return nil, err
	}
	jsonPath := filepath.Join(dir, "tokenizer.json")
	data, err := safefile.ReadFile(jsonPath, "tokenizer", safefile.TokenizerLimit)
	switch {
	case err == nil:
		t, err := parseHFJSON(data, cfg)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", jsonPath, err)
		}
		return t, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	modelPath := filepath.Join(dir, "tokenizer.model")
	data, err = safefile.ReadFile(modelPath, "tokenizer", safefile.TokenizerLimit)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("tokenizer: %s: neither tokenizer.json nor tokenizer.model", dir)
		}
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	v, err := ParseSentencePieceModel(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", modelPath, err)
	}
	ids := make(map[string]int32, len(v.Tokens))
	for i, p := range v.Tokens {
		ids[p] = int32(i)
	}
	cfg.apply(&v, ids)
	t, err := New(v)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", modelPath, err)
	}
	return t, nil
}

// hfConfig is what tokenizer_config.json says about special tokens.
type hfConfig struct {
	BOS, EOS, UNK  string
	AddBOS, AddEOS *bool
}

func readHFConfig(path string) (hfConfig, error) {
	var cfg hfConfig
	data, err := safefile.ReadFile(path, "tokenizer config", safefile.JSONLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("tokenizer: %w", err)
	}
	var raw struct {
		BOS    json.RawMessage `json:"bos_token"`
		EOS    json.RawMessage `json:"eos_token"`
		UNK    json.RawMessage `json:"unk_token"`
		AddBOS *bool           `json:"add_bos_token"`
		AddEOS *bool           `json:"add_eos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return cfg, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	cfg.BOS, cfg.EOS, cfg.UNK = tokenContent(raw.BOS), tokenContent(raw.EOS), tokenContent(raw.UNK)
	cfg.AddBOS, cfg.AddEOS = raw.AddBOS, raw.AddEOS
	return cfg, nil
}

// tokenContent reads a special token written as a string or as an
// AddedToken object {"content": ...}.
func tokenContent(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil {
		return o.Content
	}
	return ""
}

// apply sets the special ids and flags the config names.
func (c hfConfig) apply(v *Vocab, ids map[string]int32) {
	if id, ok := ids[c.BOS]; ok && c.BOS != "" {
		v.BOS = id
	}
	if id, ok := ids[c.EOS]; ok && c.EOS != "" {
		v.EOS = id
	}
	if id, ok := ids[c.UNK]; ok && c.UNK != "" {
		v.UNK = id
	}
	if c.AddBOS != nil {
		v.AddBOS = *c.AddBOS && v.BOS >= 0
	}
	if c.AddEOS != nil {
		v.AddEOS = *c.AddEOS && v.EOS >= 0
	}
}

// hfJSON is the part of tokenizer.json this package reads.
type hfJSON struct {
	AddedTokens []struct {
		ID      int32  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *hfStep `json:"normalizer"`
	PreTokenizer  *hfStep `json:"pre_tokenizer"`
	PostProcessor *struct {
		Type   string            `json:"type"`
		Single []json.RawMessage `json:"single"`
	} `json:"post_processor"`
	Model struct {
		Type         string            `json:"type"`
		Vocab        map[string]int32  `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		UnkToken     *string           `json:"unk_token"`
		ByteFallback bool              `json:"byte_fallback"`
		IgnoreMerges bool              `json:"ignore_merges"`
	} `json:"model"`
}

// hfStep is one normalizer or pre-tokenizer, possibly a Sequence.
type hfStep struct {
	Type          string    `json:"type"`
	Normalizers   []*hfStep `json:"normalizers"`
	Pretokenizers []*hfStep `json:"pretokenizers"`
	// Prepend / Replace / Metaspace
	Prepend     string `json:"prepend"`
	Content     string `json:"content"`
	Replacement string `json:"replacement"`
	Pattern     *struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	} `json:"pattern"`
	AddPrefixSpace *bool  `json:"add_prefix_space"`
	PrependScheme  string `json:"prepend_scheme"`
	Split          *bool  `json:"split"`
	// Split / ByteLevel / Digits
	Behavior         string `json:"behavior"`
	Invert           bool   `json:"invert"`
	UseRegex         *bool  `json:"use_regex"`
	IndividualDigits bool   `json:"individual_digits"`
}

// flatten lists the steps of a (possibly nested) Sequence.
func (s *hfStep) flatten() []*hfStep {
	if s == nil {
		return nil
	}
	if s.Type == "Sequence" {
		var out []*hfStep
		for _, c := range append(s.Normalizers, s.Pretokenizers...) {
			out = append(out, c.flatten()...)
		}
		return out
	}
	return []*hfStep{s}
}

// hfGPT2Regex is the regex of Hugging Face's ByteLevel pre-tokenizer.
const hfGPT2Regex = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parseHFJSON(data []byte, cfg hfConfig) (*tok, error) {
	var j hfJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	if j.Model.Type != "BPE" && !(j.Model.Type == "" && len(j.Model.Merges) > 0) {
		return nil, fmt.Errorf("%w: model type %q (only BPE is supported)", ErrBadVocab, j.Model.Type)
	}
	// Vocabulary: model vocab plus added tokens, by id.
	n := 0
	for _, id := range j.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("%w: negative id %d", ErrBadVocab, id)
		}
		n = max(n, int(id)+1)
	}
	for _, a := range j.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("%w: added token %q: negative id %d", ErrBadVocab, a.Content, a.ID)
		}
		n = max(n, int(a.ID)+1)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: empty vocabulary", ErrBadVocab)
	}
	if n > 1<<24 {
		return nil, fmt.Errorf("%w: vocabulary of %d ids", ErrBadVocab, n)
	}
	v := Vocab{Tokens: make([]string, n), Types: make([]int32, n), BOS: -1, EOS: -1, UNK: -1}
	for i := range v.Types {
		v.Types[i] = TypeUnused
	}
	for p, id := range j.Model.Vocab {
		v.Tokens[id] = p
		v.Types[id] = TypeNormal
		if j.Model.ByteFallback {
			if _, ok := parseBytePiece(p); ok {
				v.Types[id] = TypeByte
			}
		}
	}
	for _, a := range j.AddedTokens {
		v.Tokens[a.ID] = a.Content
		if a.Special {
			v.Types[a.ID] = TypeControl
		} else {
			v.Types[a.ID] = TypeUserDefined
		}
	}
	ids := make(map[string]int32, n)
	for i, p := range v.Tokens {
		if v.Types[i] != TypeUnused {
			ids[p] = int32(i)
		}
	}
	if j.Model.UnkToken != nil {
		if id, ok := ids[*j.Model.UnkToken]; ok {
			v.UNK = id
			v.Types[id] = TypeUnknown
		}
	}
	// BOS/EOS: the post-processor's template says which are added.
	if pp := j.PostProcessor; pp != nil && pp.Type == "TemplateProcessing" && len(pp.Single) > 0 {
		if id, ok := templateSpecial(pp.Single[0], ids); ok {
			v.BOS, v.AddBOS = id, true
		}
		if id, ok := templateSpecial(pp.Single[len(pp.Single)-1], ids); ok && len(pp.Single) > 1 {
			v.EOS, v.AddEOS = id, true
		}
	}
	cfg.apply(&v, ids)

	pairs, err := hfMerges(j.Model.Merges)
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("%w: a BPE model without merges (model.merges is empty or missing); it would tokenize byte by byte, which is not how the model was trained", ErrBadVocab)
	}

	// Byte-level or SentencePiece-style?
	norms := j.Normalizer.flatten()
	pres := j.PreTokenizer.flatten()
	byteLevel := false
	var regexes []string
	for _, p := range pres {
		switch p.Type {
		case "ByteLevel":
			byteLevel = true
			if p.UseRegex == nil || *p.UseRegex {
				regexes = append(regexes, hfGPT2Regex)
			}
		case "Split":
			if p.Invert || (p.Behavior != "" && p.Behavior != "Isolated") {
				return nil, fmt.Errorf("%w: Split pre-tokenizer with behavior %q invert %v not supported", ErrBadVocab, p.Behavior, p.Invert)
			}
			if p.Pattern == nil {
				return nil, fmt.Errorf("%w: Split pre-tokenizer without pattern", ErrBadVocab)
			}
			if p.Pattern.Regex != nil {
				regexes = append(regexes, *p.Pattern.Regex)
			} else if p.Pattern.String != nil {
				regexes = append(regexes, regexp2.Escape(*p.Pattern.String))
			}
		case "Digits":
			if p.IndividualDigits {
				regexes = append(regexes, `\p{N}`)
			} else {
				regexes = append(regexes, `\p{N}+`)
			}
		case "Metaspace":
			v.AddSpacePrefix = p.PrependScheme == "always" || p.PrependScheme == "first" ||
				(p.PrependScheme == "" && (p.AddPrefixSpace == nil || *p.AddPrefixSpace))
		default:
			return nil, fmt.Errorf("%w: pre-tokenizer %q not supported", ErrBadVocab, p.Type)
		}
	}
	for _, nz := range norms {
		switch nz.Type {
		case "Prepend":
			if nz.Prepend != "▁" {
				return nil, fmt.Errorf("%w: Prepend normalizer %q not supported", ErrBadVocab, nz.Prepend)
			}
			v.AddSpacePrefix = true
		case "Replace":
			if nz.Pattern == nil || nz.Pattern.String == nil || *nz.Pattern.String != " " || nz.Content != "▁" {
				return nil, fmt.Errorf("%w: Replace normalizer other than \" \" -> \"▁\" not supported", ErrBadVocab)
			}
		case "NFC":
			// Input text is taken as already NFC-normalized.
		default:
			return nil, fmt.Errorf("%w: normalizer %q not supported", ErrBadVocab, nz.Type)
		}
	}
	if byteLevel {
		v.Model = "gpt2"
		v.Pre = "default"
		v.AddSpacePrefix = false
	} else {
		v.Model = "llama"
	}
	t, err := buildTok(v, pairs)
	if err != nil {
		return nil, err
	}
	t.ignoreMerges = j.Model.IgnoreMerges
	for _, p := range pres {
		if p.Type == "Metaspace" {
			t.prefixFirstOnly = p.PrependScheme == "first"
			t.splitOnSpace = p.Split == nil || *p.Split
		}
	}
	if byteLevel {
		if t.pre, err = compilePretokenizer(regexes); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// templateSpecial reads {"SpecialToken": {"id": "<s>"}} from a
// TemplateProcessing template.
func templateSpecial(raw json.RawMessage, ids map[string]int32) (int32, bool) {
	var e struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	}
	if json.Unmarshal(raw, &e) != nil || e.SpecialToken == nil {
		return 0, false
	}
	id, ok := ids[e.SpecialToken.ID]
	return id, ok
}

// hfMerges reads merges written as "a b" strings or as ["a", "b"] pairs.
func hfMerges(raw []json.RawMessage) ([][2]string, error) {
	out := make([][2]string, 0, len(raw))
	for i, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("%w: merge %d %q has no space", ErrBadVocab, i, s)
			}
			out = append(out, [2]string{a, b})
			continue
		}
		var p []string
		if err := json.Unmarshal(r, &p); err != nil || len(p) != 2 {
			return nil, fmt.Errorf("%w: merge %d: %s", ErrBadVocab, i, r)
		}
		out = append(out, [2]string{p[0], p[1]})
	}
	return out, nil
}
