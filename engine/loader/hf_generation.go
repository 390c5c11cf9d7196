package loader

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MetaEOSIDs is the Meta key of the end-of-sequence ids a model's
// generation_config.json declares beyond its tokenizer's EOS: decimal ids
// joined by commas ("128001,128008,128009"), absent when it declares none.
const MetaEOSIDs = "eos_token_ids"

// hfGenerationEOS reads generation_config.json's eos_token_id from dir: one
// id or a list of ids (Llama 3.1 lists three). It returns nil when the file
// or the field is absent, and an error naming the file and field when the
// field is neither.
func hfGenerationEOS(dir string) ([]int32, error) {
	path := filepath.Join(dir, "generation_config.json")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loader: %w", err)
	}
	return parseGenerationEOS(path, b)
}

func parseGenerationEOS(path string, b []byte) ([]int32, error) {
	var gc struct {
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(b, &gc); err != nil {
		return nil, fmt.Errorf("loader: %s is not valid JSON: %w (fix or remove the file)", path, err)
	}
	if len(gc.EOS) == 0 || string(gc.EOS) == "null" {
		return nil, nil
	}
	var one int64
	var ids []int64
	if json.Unmarshal(gc.EOS, &one) == nil {
		ids = []int64{one}
	} else if err := json.Unmarshal(gc.EOS, &ids); err != nil {
		return nil, fmt.Errorf("loader: %s: eos_token_id is %s, want a token id or a list of token ids", path, gc.EOS)
	}
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < 0 || id > 1<<31-1 {
			return nil, fmt.Errorf("loader: %s: eos_token_id %d is not a token id (want 0 to 2147483647)", path, id)
		}
		out[i] = int32(id)
	}
	return out, nil
}

// formatEOSIDs is the MetaEOSIDs value of ids.
func formatEOSIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// ParseEOSIDs reads a MetaEOSIDs value back ("" gives nil).
func ParseEOSIDs(v string) ([]int32, error) {
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	ids := make([]int32, len(parts))
	for i, p := range parts {
		id, err := strconv.ParseInt(p, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("loader: %s %q: %q is not a token id", MetaEOSIDs, v, p)
		}
		ids[i] = int32(id)
	}
	return ids, nil
}
