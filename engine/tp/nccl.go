package tp

import (
	"fmt"
	"strconv"
	"strings"
)

// NCCLSettings are the NCCL choices of one run's communicators (the nccl
// backend of GPU ranks): part of the run configuration, checked before
// anything runs (Check) and applied when the device creates the
// communicators, which it re-creates between runs only when the settings
// or the ranks change. The zero value leaves every choice to NCCL.
//
//   - Proto and Algo are lists as NCCL_PROTO and NCCL_ALGO take them
//     ("LL,Simple", "^LL128": a leading ^ excludes), with the names as
//     NCCL spells them (any case); NCCL reads them when a communicator is
//     made.
//   - MinChannels and MaxChannels bound the channels (CTAs) an allreduce
//     uses: NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS per communicator,
//     given to NCCL as ncclConfig_t's minCTAs and maxCTAs (NCCL reads the
//     environment variables once per process).
//   - BuffSize is NCCL_BUFFSIZE, the Simple protocol's buffer per channel
//     and peer, in bytes. NCCL reads it once per process, when the first
//     communicator is made: later runs of the process can keep it, not
//     change it (the device refuses a change with that reason).
type NCCLSettings struct {
	Proto       string `json:"proto,omitempty"`
	Algo        string `json:"algo,omitempty"`
	MinChannels int    `json:"min_channels,omitempty"`
	MaxChannels int    `json:"max_channels,omitempty"`
	BuffSize    int64  `json:"buffsize,omitempty"`
}

// NCCL's names (NCCL 2.28's ncclProtoStr and ncclAlgoStr; it matches them
// without regard to case), its channel limit (MAXCHANNELS) and the range
// of buffer sizes rigscope passes on (NCCL's default is 4 MiB; its
// documentation recommends powers of two).
var (
	NCCLProtos = []string{"LL", "LL128", "Simple"}
	NCCLAlgos  = []string{"Ring", "Tree", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"}
)

const (
	NCCLMaxChannels = 64
	NCCLMinBuffSize = 64 << 10
	NCCLMaxBuffSize = 1 << 30
)

// IsZero says whether every choice is left to NCCL.
func (s NCCLSettings) IsZero() bool { return s == NCCLSettings{} }

// Check refuses, naming the setting, what NCCL would not take or what
// cannot run here: a protocol or algorithm name NCCL does not know (NCCL
// would refuse the communicator with ncclInvalidUsage), the per-function
// syntax ("allreduce:...": rigscope's communicators only sum), the NVLS
// algorithms (rigscope keeps NVLink SHARP off: NCCL_NVLS_ENABLE=0), a list
// that excludes every name, channel counts outside 1..64 or a minimum
// above the maximum, and a buffer size outside 64 KiB..1 GiB or not a
// power of two.
func (s NCCLSettings) Check() error {
	if err := checkNCCLList("NCCL_PROTO", s.Proto, NCCLProtos); err != nil {
		return err
	}
	if err := checkNCCLList("NCCL_ALGO", s.Algo, NCCLAlgos); err != nil {
		return err
	}
	if on := nvlsChosen(s.Algo); on != "" {
		return fmt.Errorf("nccl: NCCL_ALGO %q asks for %s, which needs NVLink SHARP (multicast); rigscope keeps it off (NCCL_NVLS_ENABLE=0), so NCCL would find no algorithm: choose Ring or Tree", s.Algo, on)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"minimum channels (NCCL_MIN_NCHANNELS)", s.MinChannels}, {"maximum channels (NCCL_MAX_NCHANNELS)", s.MaxChannels}} {
		if c.v < 0 || c.v > NCCLMaxChannels {
			return fmt.Errorf("nccl: %s %d: must be 1..%d (NCCL's MAXCHANNELS), or 0 for NCCL's choice", c.name, c.v, NCCLMaxChannels)
		}
	}
	if s.MinChannels > 0 && s.MaxChannels > 0 && s.MinChannels > s.MaxChannels {
		return fmt.Errorf("nccl: minimum channels %d above maximum channels %d (NCCL refuses it: invalid config min/max channels)", s.MinChannels, s.MaxChannels)
	}
	if b := s.BuffSize; b != 0 && (b < NCCLMinBuffSize || b > NCCLMaxBuffSize || b&(b-1) != 0) {
		return fmt.Errorf("nccl: buffer size (NCCL_BUFFSIZE) %d bytes: must be a power of two from %s to %s (NCCL's default is 4M), or 0 for NCCL's choice", b, FormatBytes(NCCLMinBuffSize), FormatBytes(NCCLMaxBuffSize))
	}
	return nil
}

// checkNCCLList checks one NCCL_PROTO or NCCL_ALGO list.
func checkNCCLList(env, list string, names []string) error {
	if list == "" {
		return nil
	}
	if strings.ContainsAny(list, ":;") {
		return fmt.Errorf("nccl: %s %q: give a plain list (%s; a leading ^ excludes); the per-function form (allreduce:...) is not needed: rigscope's communicators only sum", env, list, strings.Join(names, ", "))
	}
	body := strings.TrimPrefix(list, "^")
	excluded := 0
	for _, f := range strings.Split(body, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			return fmt.Errorf("nccl: %s %q: an empty name in the list (have %s)", env, list, strings.Join(names, ", "))
		}
		if canonNCCL(f, names) == "" {
			return fmt.Errorf("nccl: %s %q: %q is not one NCCL knows (have %s; a leading ^ excludes)", env, list, f, strings.Join(names, ", "))
		}
		excluded++
	}
	if body != list && excluded >= len(names) {
		return fmt.Errorf("nccl: %s %q excludes every name NCCL has, so NCCL would find none to use", env, list)
	}
	return nil
}

// canonNCCL is f as NCCL spells it ("" when NCCL does not know it).
func canonNCCL(f string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(strings.TrimSpace(f), n) {
			return n
		}
	}
	return ""
}

// nvlsChosen names an NVLS algorithm the list selects ("" for none).
func nvlsChosen(algo string) string {
	if algo == "" || strings.HasPrefix(algo, "^") {
		return "" // an exclusion never selects NVLS alone (checkNCCLList refuses excluding everything)
	}
	for _, f := range strings.Split(algo, ",") {
		if n := canonNCCL(f, NCCLAlgos); n == "NVLS" || n == "NVLSTree" {
			return n
		}
	}
	return ""
}

// Env is the settings as NCCL's environment variables, in a fixed order
// (what a run log or a table shows; the device applies the channels
// through the communicator's config).
func (s NCCLSettings) Env() []string {
	var out []string
	add := func(k, v string) { out = append(out, k+"="+v) }
	if s.Proto != "" {
		add("NCCL_PROTO", s.Proto)
	}
	if s.Algo != "" {
		add("NCCL_ALGO", s.Algo)
	}
	if s.MinChannels > 0 {
		add("NCCL_MIN_NCHANNELS", strconv.Itoa(s.MinChannels))
	}
	if s.MaxChannels > 0 {
		add("NCCL_MAX_NCHANNELS", strconv.Itoa(s.MaxChannels))
	}
	if s.BuffSize > 0 {
		add("NCCL_BUFFSIZE", strconv.FormatInt(s.BuffSize, 10))
	}
	return out
}

// String names the settings in a table: "nccl", "nccl(LL)",
// "nccl(Tree,^LL128)", "nccl(Ring,Simple,channels 2..8,buffsize 8M)".
func (s NCCLSettings) String() string {
	var parts []string
	for _, p := range []string{s.Algo, s.Proto} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	switch {
	case s.MinChannels > 0 && s.MaxChannels > 0:
		parts = append(parts, fmt.Sprintf("channels %d..%d", s.MinChannels, s.MaxChannels))
	case s.MinChannels > 0:
		parts = append(parts, fmt.Sprintf("channels >=%d", s.MinChannels))
	case s.MaxChannels > 0:
		parts = append(parts, fmt.Sprintf("channels <=%d", s.MaxChannels))
	}
	if s.BuffSize > 0 {
		parts = append(parts, "buffsize "+FormatBytes(s.BuffSize))
	}
	if len(parts) == 0 {
		return "nccl"
	}
	return "nccl(" + strings.Join(parts, ",") + ")"
}

// ParseBytes reads a byte count with an optional K, M or G (powers of
// 1024) and an optional B: "4M", "512K", "65536". "" is 0.
func ParseBytes(s string) (int64, error) {
	f := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B")
	if f == "" {
		if strings.TrimSpace(s) == "" {
			return 0, nil
		}
		return 0, fmt.Errorf("%q: not a byte count (e.g. 4M, 512K, 65536)", s)
	}
	mult := int64(1)
	switch f[len(f)-1] {
	case 'K':
		mult, f = 1<<10, f[:len(f)-1]
	case 'M':
		mult, f = 1<<20, f[:len(f)-1]
	case 'G':
		mult, f = 1<<30, f[:len(f)-1]
	}
	n, err := strconv.ParseInt(f, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q: not a byte count (e.g. 4M, 512K, 65536; up to 1T)", s)
	}
	return n * mult, nil
}

// NCCLUse is what a run's nccl communicators were: the settings the run
// asked for, NCCL's version, the buffer size in effect (NCCL_BUFFSIZE as
// NCCL read it for this process; 0 = NCCL's default, 4 MiB), and whether
// they were created for this run (false: reused from the previous run,
// whose settings and ranks were the same).
type NCCLUse struct {
	Settings NCCLSettings `json:"settings"`
	Version  string       `json:"version"`
	BuffSize int64        `json:"buffsize_in_effect,omitempty"`
	Created  bool         `json:"created"`
}
