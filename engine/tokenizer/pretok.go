package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// Pre-tokenizer regexes, copied from llama.cpp (src/llama-vocab.cpp,
// llm_tokenizer_bpe). Characters that Unicode normalization would rewrite
// (Greek Extended U+1F7D, U+1FBE, U+1FD3, U+1FDB, OHM SIGN, KELVIN SIGN)
// are written as \u escapes so that no editor can change them. Each list is applied in order: every regex splits
// each word the previous ones produced into matches and the text between.
var (
	reGPT2 = []string{
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
	}
	reLlama3 = []string{
		`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}
	reQwen2 = []string{
		`(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}
	reDeepseekLLM = []string{
		"[\r\n]",
		`\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-\u1F7Dᾀ-ᾴᾶ-ᾼ\u1FBEῂ-ῄῆ-ῌῐ-\u1FD3ῖ-\u1FDBῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\u2126ℨ\u212A-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+`,
		`\s?[!-/:-~！-／：-～‘-‟　-。]+`,
		`\s+$`,
		`[一-龥ࠀ-一가-퟿]+`,
		`\p{N}+`,
	}
	reDeepseekV3 = []string{
		`\p{N}{1,3}`,
		`[一-龥぀-ゟ゠-ヿ]+`,
		"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
	}
	reDeepseekCoder = []string{
		"[\r\n]",
		`\s?\p{L}+`,
		`\s?\p{P}+`,
		`[一-龥ࠀ-一가-퟿]+`,
		`\p{N}`,
	}
	reFalcon = []string{
		"[\\p{P}\\$\\+<=>\\^~\\|`]+",
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
		`[0-9][0-9][0-9]`,
	}
	reStarcoder = []string{
		`\p{N}`,
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
	}
	reBloom = []string{
		` ?[^(\s|.,!?…。，、।۔،)]+`,
	}
	reViking = []string{
		` ?[^(\s|.,!?…。，、।۔،)]+`,
		`\p{N}`,
	}
	reTekken = []string{
		`[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
	}
	reChameleon = []string{
		`<sentinel:[0-9]+>`,
		`(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z`,
		"([\\t\\n]|    |  )",
		`\p{N}`,
		"[\\p{P}!-/:-@\\[-`{-~]",
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
	}
	reDefault = []string{
		`[\p{P}\$\+<=>\^~\|]+`,
		`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
		`\p{N}+`,
		`[0-9][0-9][0-9]`,
	}
)

// preByName maps tokenizer.ggml.pre names to their regex lists, as
// llama.cpp's llama_vocab::impl::load does. The bool is ignore_merges.
func preByName(name string) ([]string, bool, bool) {
	switch name {
	case "", "default":
		return reDefault, false, true
	case "llama3", "llama-v3", "llama-bpe", "falcon3":
		return reLlama3, true, true
	case "dbrx", "smaug-bpe", "chatglm-bpe":
		return reLlama3, false, true
	case "deepseek-llm":
		return reDeepseekLLM, false, true
	case "deepseek-coder":
		return reDeepseekCoder, false, true
	case "deepseek-v3":
		return reDeepseekV3, false, true
	case "falcon":
		return reFalcon, false, true
	case "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b":
		return reStarcoder, false, true
	case "gpt-2", "gpt2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
		"jina-v2-de", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais":
		return reGPT2, false, true
	case "qwen2", "stablelm2", "megrez":
		return reQwen2, false, true
	case "poro-chat", "bloom", "gpt3-finnish":
		return reBloom, false, true
	case "viking":
		return reViking, false, true
	case "tekken":
		return reTekken, true, true
	case "chameleon":
		return reChameleon, false, true
	}
	return nil, false, false
}

// pretokenizer splits text into words for byte-level BPE.
type pretokenizer struct {
	res []*regexp2.Regexp
}

func newPretokenizer(name string) (*pretokenizer, bool, error) {
	exprs, ignore, ok := preByName(name)
	if !ok {
		return nil, false, fmt.Errorf("tokenizer: %w: unknown pre-tokenizer %q", ErrBadVocab, name)
	}
	p, err := compilePretokenizer(exprs)
	return p, ignore, err
}

// compilePretokenizer compiles regexes written for llama.cpp's ECMAScript
// std::regex (or Hugging Face's Rust/Oniguruma) for regexp2: "$" at the end
// of a pattern means end of input there, which is `\z` in .NET syntax.
func compilePretokenizer(exprs []string) (*pretokenizer, error) {
	p := &pretokenizer{}
	for _, e := range exprs {
		src := e
		if strings.HasSuffix(src, "$") && !strings.HasSuffix(src, `\$`) {
			src = src[:len(src)-1] + `\z`
		}
		re, err := regexp2.Compile(src, regexp2.None)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w: pre-tokenizer regex %q: %v", ErrBadVocab, e, err)
		}
		p.res = append(p.res, re)
	}
	return p, nil
}

// split returns the words of text: for each regex in turn, every current
// word is cut into its matches and the unmatched runs between them.
func (p *pretokenizer) split(text string) []string {
	if text == "" {
		return nil
	}
	words := []string{text}
	for _, re := range p.res {
		next := make([]string, 0, len(words)*2)
		for _, w := range words {
			next = splitWord(re, w, next)
		}
		words = next
	}
	return words
}

// splitWord appends w cut by the matches of re. regexp2 reports positions
// in runes; offs maps them back to byte offsets so that invalid UTF-8 bytes
// pass through unchanged.
func splitWord(re *regexp2.Regexp, w string, out []string) []string {
	runes := make([]rune, 0, len(w))
	offs := make([]int, 0, len(w)+1)
	for i, r := range w {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(w))
	m, err := re.FindRunesMatch(runes)
	last := 0
	for err == nil && m != nil {
		if m.Length == 0 {
			break // cannot happen with these patterns; avoid looping
		}
		if m.Index > last {
			out = append(out, w[offs[last]:offs[m.Index]])
		}
		out = append(out, w[offs[m.Index]:offs[m.Index+m.Length]])
		last = m.Index + m.Length
		m, err = re.FindNextMatch(m)
	}
	if last < len(runes) {
		out = append(out, w[offs[last]:])
	}
	return out
}

// byteUnicode maps each byte to the printable rune GPT-2's byte-level BPE
// writes it as (bytes_to_unicode); unicodeByte is its inverse.
var byteUnicode, unicodeByte = buildByteMaps()

func buildByteMaps() ([256]string, map[rune]byte) {
	var b2u [256]string
	u2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		var r rune
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			r = rune(b)
		} else {
			r = rune(256 + n)
			n++
		}
		b2u[b] = string(r)
		u2b[r] = byte(b)
	}
	return b2u, u2b
}

// byteEncode writes every byte of s as its byte-level rune.
func byteEncode(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		sb.WriteString(byteUnicode[s[i]])
	}
	return sb.String()
}

// byteDecode reverses byteEncode; runes outside the byte alphabet are kept
// as their UTF-8.
func byteDecode(s string, out []byte) []byte {
	for _, r := range s {
		if b, ok := unicodeByte[r]; ok {
			out = append(out, b)
		} else {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}
