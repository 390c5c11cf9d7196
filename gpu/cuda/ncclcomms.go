package cuda

// A run's NCCL communicators and settings, decided on the host (no CUDA
// needed, so the logic is tested everywhere with a fake maker).

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"rigscope/engine/tp"
)

// NCCLSettings are the NCCL choices of a run's communicators (engine/tp:
// part of the run configuration).
type NCCLSettings = tp.NCCLSettings

// ncclMaker creates and destroys the communicators of ranks on gpus (one
// per GPU) with settings s: nccl.go's driverNCCL on a cuda build, a fake
// in tests.
type ncclMaker interface {
	create(gpus []int, s NCCLSettings) ([]uintptr, error)
	destroy(comms []uintptr)
}

// ncclComms are a target's communicators with the GPUs and settings they
// were made with. ensure makes them when nccl is first chosen, keeps them
// while later runs ask for the same GPUs and settings (a backend swap
// away from nccl and back keeps them too), and makes new ones when either
// changed, destroying the old ones only once the new ones exist (a refused
// setting leaves the previous communicators usable).
type ncclComms struct {
	gpus  []int
	set   NCCLSettings
	comms []uintptr
}

// ensure returns whether it created communicators (false: reused).
func (c *ncclComms) ensure(m ncclMaker, gpus []int, s NCCLSettings) (created bool, err error) {
	if c.comms != nil && slices.Equal(c.gpus, gpus) && c.set == s {
		return false, nil
	}
	comms, err := m.create(gpus, s)
	if err != nil {
		return false, fmt.Errorf("cuda: nccl communicators on GPUs %s with %s: %w", joinInts(gpus), s, err)
	}
	if len(comms) != len(gpus) {
		m.destroy(comms)
		return false, fmt.Errorf("cuda: nccl: %d communicators made for %d GPUs", len(comms), len(gpus))
	}
	if c.comms != nil {
		m.destroy(c.comms)
	}
	c.gpus, c.set, c.comms = slices.Clone(gpus), s, comms
	return true, nil
}

// close destroys the communicators.
func (c *ncclComms) close(m ncclMaker) {
	if c.comms != nil {
		m.destroy(c.comms)
	}
	*c = ncclComms{}
}

// ncclProcess is what NCCL reads once per process (NCCL_PARAM caches the
// first read): NCCL_BUFFSIZE, read when the first communicator is made,
// and the channel bounds of the environment (NCCL_MIN_NCHANNELS,
// NCCL_MAX_NCHANNELS, their old NRINGS names, NCCL_MIN_CTAS and
// NCCL_MAX_CTAS), which NCCL applies to every communicator over its
// config. NCCL_PROTO and NCCL_ALGO are read again for each communicator,
// so a run sets them around the creation (withNCCLEnv).
type ncclProcess struct {
	mu   sync.Mutex
	made bool  // a communicator was made: NCCL has read NCCL_BUFFSIZE
	buff int64 // NCCL_BUFFSIZE as NCCL read it (0: unset, NCCL's default 4 MiB)
}

// ncclChannelEnv are the environment variables NCCL applies to every
// communicator's channel count, over a communicator's own config.
var ncclChannelEnv = []string{"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS", "NCCL_MIN_CTAS", "NCCL_MAX_CTAS"}

// admit checks s against what NCCL has read or will read from the
// process environment (getenv) and returns the buffer size the new
// communicators will have (0: NCCL's default) and the NCCL_BUFFSIZE value
// to set while they are made ("" to leave the environment as it is).
func (p *ncclProcess) admit(s NCCLSettings, getenv func(string) string) (buff int64, setEnv string, err error) {
	if err := s.Check(); err != nil {
		return 0, "", err
	}
	if s.MinChannels > 0 || s.MaxChannels > 0 {
		var set []string
		for _, k := range ncclChannelEnv {
			if v := getenv(k); v != "" {
				set = append(set, k+"="+v)
			}
		}
		if len(set) > 0 {
			return 0, "", fmt.Errorf("nccl: %s in rigscope's environment: NCCL applies it to every communicator of the process, over a run's channel settings (%s); unset it to choose channels per run", strings.Join(set, ", "), s)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.made {
		if s.BuffSize != 0 && s.BuffSize != p.buff {
			return 0, "", fmt.Errorf("nccl: buffer size (NCCL_BUFFSIZE) %s: NCCL reads it once per process, when the first communicator is made, and this process's communicators have %s; restart rigscope to use %s (or leave the buffer size to the process's)",
				tp.FormatBytes(s.BuffSize), buffName(p.buff), tp.FormatBytes(s.BuffSize))
		}
		return p.buff, "", nil
	}
	if s.BuffSize != 0 {
		return s.BuffSize, fmt.Sprint(s.BuffSize), nil
	}
	if v := getenv("NCCL_BUFFSIZE"); v != "" {
		b, err := tp.ParseBytes(v)
		if err != nil || fmt.Sprint(b) != strings.TrimSpace(v) {
			return 0, "", fmt.Errorf("nccl: NCCL_BUFFSIZE=%q in rigscope's environment: NCCL wants a whole number of bytes", v)
		}
		return b, "", nil
	}
	return 0, "", nil
}

// made records that communicators with buffer size buff exist (NCCL has
// read NCCL_BUFFSIZE for the process).
func (p *ncclProcess) madeWith(buff int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.made {
		p.made, p.buff = true, buff
	}
}

// buffInEffect is NCCL_BUFFSIZE as NCCL read it for the process (0: NCCL's
// default, or no communicator made yet).
func (p *ncclProcess) buffInEffect() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.buff
}

func buffName(b int64) string {
	if b == 0 {
		return "NCCL's default (4M)"
	}
	return tp.FormatBytes(b)
}

// ncclConfigCTAs are the minCTAs and maxCTAs of ncclConfig_t for s (0:
// NCCL's choice; ncclConfigUndef in the config). NCCL refuses a minimum
// above an undefined maximum, so a minimum alone comes with NCCL's own
// maximum (MAXCHANNELS).
func ncclConfigCTAs(s NCCLSettings) (minCTAs, maxCTAs int) {
	minCTAs, maxCTAs = s.MinChannels, s.MaxChannels
	if minCTAs > 0 && maxCTAs == 0 {
		maxCTAs = tp.NCCLMaxChannels
	}
	return minCTAs, maxCTAs
}
