package tp

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"rigscope/engine/metrics"
	"rigscope/internal/safefile"
)

// AutoRule: messages of at most MaxBytes (and more than the previous rule's)
// use Backend. The last rule also covers every larger message.
type AutoRule struct {
	MaxBytes int64  `json:"max_bytes"`
	Backend  string `json:"backend"`
}

// CalibPoint is one measured cell of the sweep.
type CalibPoint struct {
	Bytes   int64   `json:"bytes"`
	Backend string  `json:"backend"`
	TimeUs  float64 `json:"time_us"`
}

// AutoTable is what the auto backend picks from, for one group size.
type AutoTable struct {
	Ranks      int          `json:"ranks"`
	Rules      []AutoRule   `json:"rules"`
	Points     []CalibPoint `json:"points"`
	MeasuredAt time.Time    `json:"measured_at"`
	Took       float64      `json:"took_s"`
	// Source is "cache" or "measured"; Note says why it was (re)measured.
	Source string `json:"-"`
	Note   string `json:"-"`
}

func (t *AutoTable) pick(bytes int64) int {
	for i, r := range t.Rules {
		if bytes <= r.MaxBytes {
			return i
		}
	}
	return len(t.Rules) - 1
}

// Pick is the backend auto uses for a message of this many bytes.
func (t *AutoTable) Pick(bytes int64) string { return t.Rules[t.pick(bytes)].Backend }

// Crossover is a message size where auto switches backend: messages of more
// than AfterBytes use To instead of From.
type Crossover struct {
	AfterBytes int64  `json:"after_bytes"`
	From       string `json:"from"`
	To         string `json:"to"`
}

// Crossovers lists where the table switches backend.
func (t *AutoTable) Crossovers() []Crossover {
	var out []Crossover
	for i := 1; i < len(t.Rules); i++ {
		if t.Rules[i].Backend != t.Rules[i-1].Backend {
			out = append(out, Crossover{t.Rules[i-1].MaxBytes, t.Rules[i-1].Backend, t.Rules[i].Backend})
		}
	}
	return out
}

// autoCandidates are the backends auto chooses among (exact ones only: the
// compressed ones change the numbers).
var autoCandidates = []string{"ring", "tree", "oneshot", "twoshot"}

// calibSizes are the swept message sizes in bytes.
var calibSizes = []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// Calibrate measures every candidate backend at each sweep size for this
// many ranks, stopping early (and saying so in Note) when budget runs out.
func Calibrate(ctx context.Context, ranks int, budget time.Duration) (*AutoTable, error) {
	if budget <= 0 {
		budget = 1500 * time.Millisecond
	}
	start := time.Now()
	t := &AutoTable{Ranks: ranks, MeasuredAt: start.UTC(), Source: "measured"}
	groups := map[string]*Group{}
	for _, b := range autoCandidates {
		g, err := NewGroup(b, ranks, GroupOptions{})
		if err != nil {
			return nil, err
		}
		groups[b] = g
	}
	cell := budget / time.Duration(len(calibSizes)*len(autoCandidates))
	var last time.Duration // how long the previous size took
	for _, size := range calibSizes {
		// Sizes grow 4x; stop when the next one would overrun the budget.
		if el := time.Since(start); el > budget || (len(t.Rules) > 0 && el+4*last > budget) {
			t.Note = fmt.Sprintf("calibration budget %v would run out at %s; larger messages use the last winner", budget, FormatBytes(size))
			break
		}
		sizeStart := time.Now()
		best, bestT := "", time.Duration(0)
		times := map[string]time.Duration{}
		for _, b := range autoCandidates {
			d, err := measureFor(ctx, groups[b], int(size/4), cell)
			if err != nil {
				return nil, fmt.Errorf("tp: calibrating %s at %d B on %d ranks: %w", b, size, ranks, err)
			}
			t.Points = append(t.Points, CalibPoint{size, b, float64(d.Nanoseconds()) / 1e3})
			times[b] = d
			if best == "" || d < bestT {
				best, bestT = b, d
			}
		}
		// Hysteresis against noise: keep the previous size's winner unless
		// the new one is more than 10 % faster.
		if n := len(t.Rules); n > 0 {
			if prev := t.Rules[n-1].Backend; times[prev] > 0 && float64(times[prev]) <= 1.1*float64(bestT) {
				best = prev
			}
		}
		last = time.Since(sizeStart)
		if n := len(t.Rules); n > 0 && t.Rules[n-1].Backend == best {
			t.Rules[n-1].MaxBytes = size
		} else {
			t.Rules = append(t.Rules, AutoRule{size, best})
		}
	}
	if len(t.Rules) == 0 {
		t.Rules = []AutoRule{{calibSizes[0], "oneshot"}}
	}
	t.Took = time.Since(start).Seconds()
	return t, nil
}

// measureFor times one call: one warm-up call, then three runs of as many
// calls as fit in about target/3 (at least 2, at most 200 each; one run when
// calls are slow); the fastest run counts, since interference from other
// work only ever adds time.
func measureFor(ctx context.Context, g *Group, elems int, target time.Duration) (time.Duration, error) {
	bufs := RandomInputs(g.Size(), elems, 1)
	once, err := Measure(ctx, g, bufs, 1)
	if err != nil {
		return 0, err
	}
	iters, repeats := 2, 3
	if once > 0 {
		iters = int(min(200, max(2, int64(target/3/once))))
	}
	if time.Duration(iters*repeats)*once > 2*target {
		repeats = 1 // slow calls: one run, to stay within the budget
	}
	best := time.Duration(0)
	for range repeats {
		d, err := Measure(ctx, g, bufs, iters)
		if err != nil {
			return 0, err
		}
		if best == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

// RandomInputs returns ranks buffers of elems values uniform in [-1, 1).
func RandomInputs(ranks, elems int, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, uint64(elems)))
	out := make([][]float32, ranks)
	for r := range out {
		out[r] = make([]float32, elems)
		for i := range out[r] {
			out[r][i] = float32(rng.Float64()*2 - 1)
		}
	}
	return out
}

// Measure runs iters allreduces on every rank of g over bufs[rank] (in
// place: the values grow) and returns the mean wall time per call, measured
// from the start of the first call on any rank to the end of the last.
func Measure(ctx context.Context, g *Group, bufs [][]float32, iters int) (time.Duration, error) {
	if len(bufs) != g.Size() {
		return 0, fmt.Errorf("tp: measure: %d buffers for %d ranks", len(bufs), g.Size())
	}
	var wg sync.WaitGroup
	errs := make([]error, g.Size())
	start := time.Now()
	for r := range g.Size() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := g.Comm(r)
			for range iters {
				if err := c.AllReduceSum(ctx, bufs[r]); err != nil {
					errs[r] = err
					g.Abort(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return el / time.Duration(max(iters, 1)), nil
}

// cacheFile is the calibration cache: tables per group size, valid for one
// machine and one build.
type cacheFile struct {
	Machine string             `json:"machine"`
	Build   string             `json:"build"`
	Tables  map[int]*AutoTable `json:"tables"`
}

// calibrationFormat changes when the sweep or the algorithms change, so
// caches made by an older build are redone even without VCS stamps.
const calibrationFormat = "allreduce-calibration/1"

// MachineKey names this machine for the cache: hostname, CPU model, CPUs,
// OS and architecture.
func MachineKey() string {
	host, _ := os.Hostname() // an empty name still keys consistently
	return fmt.Sprintf("host=%s cpu=%q ncpu=%d %s/%s", host, cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// BuildKey names this build: the calibration format, Go version, module
// version and VCS revision when stamped.
func BuildKey() string {
	s := calibrationFormat + " " + runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		s += " " + bi.Main.Version
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" || kv.Key == "vcs.modified" {
				s += " " + kv.Key + "=" + kv.Value
			}
		}
	}
	return s
}

// CachePath is the calibration cache file for this machine.
func CachePath(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("RIGSCOPE_CACHE_DIR")
	}
	if dir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("tp: no cache directory for the allreduce calibration (set RIGSCOPE_CACHE_DIR): %w", err)
		}
		dir = filepath.Join(d, "rigscope")
	}
	sum := sha256.Sum256([]byte(MachineKey()))
	return filepath.Join(dir, "allreduce-"+hex.EncodeToString(sum[:6])+".json"), nil
}

// LoadOrCalibrate returns the auto table for ranks from the cache, or
// measures it (and saves it) when the cache is missing, made on another
// machine or by another build, or lacks this group size. A cache that is
// bad (not a regular file, too large, corrupt, or naming backends, ranks or
// sizes that cannot be right) is never fatal: it is moved aside to
// PATH.bad, named in a warning (opts.Warn), and measured again. The
// table's Source and Note say which and why.
func LoadOrCalibrate(ctx context.Context, ranks int, opts GroupOptions) (*AutoTable, error) {
	path, err := CachePath(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	cf, why, bad := readCache(path)
	if bad {
		why = moveAside(path, why)
		if opts.Warn != nil {
			opts.Warn(why)
		}
	}
	if cf != nil {
		if t := cf.Tables[ranks]; t != nil {
			t.Source, t.Note = "cache", "from "+path
			return t, nil
		}
		why = fmt.Sprintf("calibration cache %s has no table for %d ranks", path, ranks)
	}
	return calibrateAndSave(ctx, ranks, opts, path, cf, why)
}

// moveAside renames a bad cache to PATH.bad (replacing an older one) and
// returns the warning that says so.
func moveAside(path, why string) string {
	aside := path + ".bad"
	if err := os.Rename(path, aside); err != nil {
		return fmt.Sprintf("%s; could not move it aside (%v); measuring again", why, err)
	}
	return fmt.Sprintf("%s; moved it to %s and measuring again", why, aside)
}

// Recalibrate measures the table for ranks again and replaces it in the cache.
func Recalibrate(ctx context.Context, ranks int, opts GroupOptions) (*AutoTable, error) {
	path, err := CachePath(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	cf, _, _ := readCache(path)
	return calibrateAndSave(ctx, ranks, opts, path, cf, "recalibration requested")
}

func calibrateAndSave(ctx context.Context, ranks int, opts GroupOptions, path string, cf *cacheFile, why string) (*AutoTable, error) {
	if opts.Calibrating != nil {
		opts.Calibrating(why, false)
		defer opts.Calibrating(why, true)
	}
	t, err := Calibrate(ctx, ranks, opts.CalibrationBudget)
	if err != nil {
		return nil, err
	}
	if cf == nil {
		cf = &cacheFile{Machine: MachineKey(), Build: BuildKey(), Tables: map[int]*AutoTable{}}
	}
	cf.Tables[ranks] = t
	note := fmt.Sprintf("%s; calibrated %d ranks in %.2fs", why, ranks, t.Took)
	if t.Note != "" {
		note += " (" + t.Note + ")"
	}
	if err := writeCache(path, cf); err != nil {
		note += "; not cached: " + err.Error()
	} else {
		note += "; saved to " + path
	}
	t.Note = note
	return t, nil
}

// cacheLimit bounds the calibration cache file (a real one is a few KB).
const cacheLimit = 1 << 20

// readCache returns the cache, or nil and why it cannot be used; bad says
// the file itself is wrong (rather than missing or stale) and should be
// moved aside.
func readCache(path string) (cf *cacheFile, why string, bad bool) {
	data, err := safefile.ReadFile(path, "calibration cache", cacheLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "no calibration cache at " + path, false
	}
	if err != nil {
		return nil, err.Error(), true
	}
	cf = new(cacheFile)
	if err := json.Unmarshal(data, cf); err != nil {
		return nil, fmt.Sprintf("calibration cache %s is corrupt (%v)", path, err), true
	}
	if m := MachineKey(); cf.Machine != m {
		return nil, fmt.Sprintf("calibration cache %s was made on another machine (%s; this is %s)", path, cf.Machine, m), false
	}
	if b := BuildKey(); cf.Build != b {
		return nil, fmt.Sprintf("calibration cache %s was made by another build (%s; this is %s)", path, cf.Build, b), false
	}
	if err := cf.validate(); err != nil {
		return nil, fmt.Sprintf("calibration cache %s is invalid (%v)", path, err), true
	}
	if cf.Tables == nil {
		cf.Tables = map[int]*AutoTable{}
	}
	return cf, "", false
}

// validate checks every table as auto would use it: ranks that match their
// key and a CPU group can have, at least one rule, rules naming the exact
// backends auto picks from with sizes strictly increasing, and measured
// points that are finite.
func (cf *cacheFile) validate() error {
	for ranks, t := range cf.Tables {
		switch {
		case t == nil:
			return fmt.Errorf("table for %d ranks is null", ranks)
		case t.Ranks != ranks:
			return fmt.Errorf("table filed under %d ranks says %d ranks", ranks, t.Ranks)
		case ranks < 2 || ranks > MaxRanks:
			return fmt.Errorf("table for %d ranks: a CPU group has 2 to %d ranks", ranks, MaxRanks)
		case len(t.Rules) == 0:
			return fmt.Errorf("table for %d ranks has no rules", ranks)
		}
		for i, r := range t.Rules {
			if !slices.Contains(autoCandidates, r.Backend) {
				return fmt.Errorf("table for %d ranks, rule %d names backend %q; auto picks only the exact %s", ranks, i, r.Backend, strings.Join(autoCandidates, ", "))
			}
			if r.MaxBytes <= 0 || (i > 0 && r.MaxBytes <= t.Rules[i-1].MaxBytes) {
				return fmt.Errorf("table for %d ranks, rule %d: max_bytes %d is not above the previous rule's (sizes must increase)", ranks, i, r.MaxBytes)
			}
		}
		for i, p := range t.Points {
			if !slices.Contains(autoCandidates, p.Backend) || p.Bytes <= 0 || math.IsNaN(p.TimeUs) || math.IsInf(p.TimeUs, 0) || p.TimeUs < 0 {
				return fmt.Errorf("table for %d ranks, point %d (%s at %d bytes, %v us) is not a measurement", ranks, i, p.Backend, p.Bytes, p.TimeUs)
			}
		}
	}
	return nil
}

// writeCache writes atomically (temp file in the same directory, synced,
// renamed).
func writeCache(path string, cf *cacheFile) error {
	data, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return metrics.WriteFileAtomic(path, data)
}

// FormatBytes writes a size the way the bench flags take it (1K, 4M, 300).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "G"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "K"
	}
	return strconv.FormatInt(n, 10)
}
