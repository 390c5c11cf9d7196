package loader

import (
	"strings"
	"testing"

	"rigscope/internal/fixtures"
)

func TestParseGenerationEOS(t *testing.T) {
	for _, tc := range []struct {
		json    string
		want    string // formatEOSIDs of the ids
		wantErr string
	}{
		{`{"eos_token_id": 2}`, "2", ""},
		{`{"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}`, "128001,128008,128009", ""},
		{`{"eos_token_id": null}`, "", ""},
		{`{"do_sample": true}`, "", ""},
		{`{"eos_token_id": "</s>"}`, "", `eos_token_id is "</s>", want a token id or a list of token ids`},
		{`{"eos_token_id": [1, -3]}`, "", "eos_token_id -3 is not a token id"},
		{`{"eos_token_id": 4294967296}`, "", "eos_token_id 4294967296 is not a token id"},
		{`{"eos_token_id": 2`, "", "generation_config.json is not valid JSON"},
	} {
		ids, err := parseGenerationEOS("m/generation_config.json", []byte(tc.json))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one saying %q", tc.json, err, tc.wantErr)
			}
			continue
		}
		if err != nil || formatEOSIDs(ids) != tc.want {
			t.Errorf("%s: got %v, %v; want %q", tc.json, ids, err, tc.want)
			continue
		}
		back, err := ParseEOSIDs(formatEOSIDs(ids))
		if err != nil || formatEOSIDs(back) != tc.want {
			t.Errorf("%s: meta round trip gave %v, %v", tc.json, back, err)
		}
	}
}

func TestParseEOSIDsBad(t *testing.T) {
	for _, v := range []string{"1,", "x", "-1", "1,,2", "99999999999"} {
		if ids, err := ParseEOSIDs(v); err == nil {
			t.Errorf("ParseEOSIDs(%q) = %v, want an error", v, ids)
		}
	}
}

// The arch fixtures' generation_config.json files declare eos_token_id 2.
func TestHFGenerationEOSFixture(t *testing.T) {
	src, err := Open(fixtures.Path(t, "arch/tiny-llama31-hf"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if got := src.Meta()[MetaEOSIDs]; got != "2" {
		t.Errorf("Meta[%s] = %q, want \"2\" (generation_config.json's eos_token_id)", MetaEOSIDs, got)
	}
}

func FuzzParseGenerationEOS(f *testing.F) {
	f.Add([]byte(`{"eos_token_id": [128001, 128009]}`))
	f.Add([]byte(`{"eos_token_id": 1e3}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseGenerationEOS("generation_config.json", b)
		if err != nil {
			return
		}
		back, err := ParseEOSIDs(formatEOSIDs(ids))
		if err != nil || formatEOSIDs(back) != formatEOSIDs(ids) {
			t.Fatalf("ids %v do not survive Meta: %v, %v", ids, back, err)
		}
	})
}
