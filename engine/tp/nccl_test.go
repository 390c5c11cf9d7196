package tp

import (
	"slices"
	"strings"
	"testing"
)

func TestNCCLSettingsCheck(t *testing.T) {
	for _, tc := range []struct {
		s    NCCLSettings
		name string // String() when accepted
		bad  string // "" = accepted; else a phrase the error must hold
	}{
		{NCCLSettings{}, "nccl", ""},
		{NCCLSettings{Proto: "LL"}, "nccl(LL)", ""},
		{NCCLSettings{Proto: "^LL128", Algo: "Tree"}, "nccl(Tree,^LL128)", ""},
		{NCCLSettings{Proto: "LL,Simple", Algo: "ring"}, "nccl(ring,LL,Simple)", ""},
		{NCCLSettings{Algo: "collnetdirect,PAT"}, "nccl(collnetdirect,PAT)", ""},
		{NCCLSettings{Algo: "^NVLS,NVLSTree"}, "nccl(^NVLS,NVLSTree)", ""},
		{NCCLSettings{MinChannels: 2, MaxChannels: 8}, "nccl(channels 2..8)", ""},
		{NCCLSettings{MinChannels: 4}, "nccl(channels >=4)", ""},
		{NCCLSettings{MaxChannels: 64}, "nccl(channels <=64)", ""},
		{NCCLSettings{MinChannels: 3, MaxChannels: 3}, "nccl(channels 3..3)", ""},
		{NCCLSettings{BuffSize: 8 << 20}, "nccl(buffsize 8M)", ""},
		{NCCLSettings{BuffSize: 64 << 10}, "nccl(buffsize 64K)", ""},
		{NCCLSettings{BuffSize: 1 << 30}, "nccl(buffsize 1G)", ""},
		{NCCLSettings{Proto: "Simple", Algo: "Ring", MinChannels: 2, MaxChannels: 8, BuffSize: 1 << 21}, "nccl(Ring,Simple,channels 2..8,buffsize 2M)", ""},

		{NCCLSettings{Proto: "LL256"}, "", `"LL256" is not one NCCL knows`},
		{NCCLSettings{Algo: "Butterfly"}, "", `NCCL_ALGO "Butterfly": "Butterfly" is not one NCCL knows`},
		{NCCLSettings{Proto: "LL,,Simple"}, "", "an empty name"},
		{NCCLSettings{Proto: "^"}, "", "an empty name"},
		{NCCLSettings{Proto: "allreduce:LL"}, "", "plain list"},
		{NCCLSettings{Algo: "Ring;allreduce:Tree"}, "", "plain list"},
		{NCCLSettings{Proto: "^LL,LL128,Simple"}, "", "excludes every name"},
		{NCCLSettings{Algo: "NVLS"}, "", "NCCL_NVLS_ENABLE=0"},
		{NCCLSettings{Algo: "Ring,nvlstree"}, "", "NVLSTree"},
		{NCCLSettings{MinChannels: 65}, "", "minimum channels (NCCL_MIN_NCHANNELS) 65: must be 1..64"},
		{NCCLSettings{MaxChannels: -1}, "", "maximum channels (NCCL_MAX_NCHANNELS) -1"},
		{NCCLSettings{MinChannels: 9, MaxChannels: 8}, "", "minimum channels 9 above maximum channels 8"},
		{NCCLSettings{BuffSize: 3 << 20}, "", "power of two"},
		{NCCLSettings{BuffSize: 32 << 10}, "", "from 64K to 1G"},
		{NCCLSettings{BuffSize: 2 << 30}, "", "NCCL_BUFFSIZE"},
		{NCCLSettings{BuffSize: -4096}, "", "NCCL_BUFFSIZE"},
	} {
		err := tc.s.Check()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%#v.Check() = %v, want accepted", tc.s, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%#v.Check() = %v, want an error holding %q", tc.s, err, tc.bad)
		case tc.bad == "" && tc.s.String() != tc.name:
			t.Errorf("%#v.String() = %q, want %q", tc.s, tc.s.String(), tc.name)
		}
	}
}

func TestNCCLSettingsEnv(t *testing.T) {
	for _, tc := range []struct {
		s    NCCLSettings
		want []string
	}{
		{NCCLSettings{}, nil},
		{NCCLSettings{Proto: "LL128", Algo: "Tree", MinChannels: 2, MaxChannels: 4, BuffSize: 1 << 20},
			[]string{"NCCL_PROTO=LL128", "NCCL_ALGO=Tree", "NCCL_MIN_NCHANNELS=2", "NCCL_MAX_NCHANNELS=4", "NCCL_BUFFSIZE=1048576"}},
		{NCCLSettings{MaxChannels: 16}, []string{"NCCL_MAX_NCHANNELS=16"}},
	} {
		if got := tc.s.Env(); !slices.Equal(got, tc.want) {
			t.Errorf("%#v.Env() = %q, want %q", tc.s, got, tc.want)
		}
		if tc.s.IsZero() != (tc.want == nil) {
			t.Errorf("%#v.IsZero() = %v", tc.s, tc.s.IsZero())
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{"", 0, false}, {"65536", 65536, false}, {"4M", 4 << 20, false}, {"4m", 4 << 20, false}, {"512K", 512 << 10, false},
		{"1G", 1 << 30, false}, {"8MB", 8 << 20, false}, {" 2M ", 2 << 20, false},
		{"B", 0, true}, {"4X", 0, true}, {"-1M", 0, true}, {"1.5M", 0, true}, {"2000G", 0, true}, {"M", 0, true},
	} {
		got, err := ParseBytes(tc.in)
		if tc.bad != (err != nil) || (!tc.bad && got != tc.want) {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
		if !tc.bad && tc.want > 0 {
			if back, _ := ParseBytes(FormatBytes(got)); back != got {
				t.Errorf("FormatBytes(%d) = %q reads back as %d", got, FormatBytes(got), back)
			}
		}
	}
}
