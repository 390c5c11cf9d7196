//go:build cuda

package cuda

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"rigscope/engine/loader"
	"rigscope/engine/model"
	"rigscope/engine/sample"
	"rigscope/engine/spec"
)

// runSampleCheck runs checkSample when -checks names sample.
func runSampleCheck(ctx context.Context, d *Device, models string, want map[string]bool, stdout io.Writer) []error {
	if !want["sample"] {
		return nil
	}
	if err := checkSample(ctx, d, models, stdout); err != nil {
		return []error{err}
	}
	return nil
}

// checkSample checks the sample kernels (kernels/sample.cu, sample_bins.cu)
// against engine/sample, the specification: on random logits rows (three
// vocabularies, Gaussian and heavily tied values) and on gocoder-14m's real
// logits, for every setting, the device's id with a uniform number against
// the host's SampleU with the same number, the kept-set sizes and the
// probability rows to the bit (any difference fails); a chi-square of
// many device draws against the host's probabilities; then spec.Generate
// on gocoder and the llama-8b shape through SampleIDs against host
// sampling over Forward's logits (same seed: same tokens; tok/s of both).
func checkSample(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	var errs []error
	if err := sampleGenerate(ctx, d, models, stdout); err != nil {
		errs = append(errs, fmt.Errorf("cuda-check: sample generate: %w", err))
	}
	unbind, err := d.Bind()
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(19, 1))
	fmt.Fprintf(stdout, "\n")
	for _, kern := range checkedSampleKernels {
		for _, vocab := range []int{4096, 128256} {
			for _, p := range []sample.Params{{Temperature: 1}, {Temperature: 0.8, TopP: 0.9}, {Temperature: 0.7, TopK: 40}} {
				if err := timeSample(d, kern, randomLogits(rng, "gauss sd 6", 1, vocab), p, stdout); err != nil {
					unbind()
					return fmt.Errorf("cuda-check: sample timing: %w", err)
				}
			}
			if err := timeSample(d, kern, randomLogits(rng, "gauss sd 1", 1, vocab), sample.Params{Temperature: 0.8, TopP: 0.9}, stdout); err != nil {
				unbind()
				return fmt.Errorf("cuda-check: sample timing: %w", err)
			}
		}
	}
	fmt.Fprintf(stdout, "\nsample kernels against engine/sample (same logits, same uniform): ids equal, kept-set sizes equal, probability rows equal to the bit\n")
	fmt.Fprintf(stdout, "%-44s %-26s %14s %14s %10s\n", "logits", "setting", "ids equal", "kept equal", "rows bitwise")
	var bad, draws int
	for _, kern := range checkedSampleKernels {
		for _, vocab := range []int{4096, 32000, 128256} {
			for _, dist := range []string{"gauss sd 1", "gauss sd 6", "ties"} {
				rows := randomLogits(rng, dist, 4, vocab)
				n, all, err := compareSample(d, kern, rows, vocab, rng, fmt.Sprintf("%s V=%d %s", kern, vocab, dist), stdout)
				if err != nil {
					unbind()
					return fmt.Errorf("cuda-check: sample: %w", err)
				}
				bad, draws = bad+n, draws+all
			}
		}
	}
	unbind()
	real, err := gocoderLogits(ctx, d, models)
	if err != nil {
		return fmt.Errorf("cuda-check: sample: gocoder logits: %w", err)
	}
	if unbind, err = d.Bind(); err != nil {
		return err
	}
	for _, kern := range checkedSampleKernels {
		var n, all int
		if n, all, err = compareSample(d, kern, real, 4096, rng, fmt.Sprintf("%s gocoder-14m %d rows", kern, len(real)/4096), stdout); err != nil {
			break
		}
		bad, draws = bad+n, draws+all
	}
	if err == nil {
		err = chiSquareSample(d, real[:4096], sample.Params{Temperature: 0.8, TopP: 0.9}, "gocoder row 0", stdout)
	}
	if err == nil {
		err = chiSquareSample(d, randomLogits(rng, "gauss sd 1", 1, 32000), sample.Params{Temperature: 1, TopK: 50}, "random V=32000", stdout)
	}
	unbind()
	if err != nil {
		return fmt.Errorf("cuda-check: sample: %w", err)
	}
	fmt.Fprintf(stdout, "ids that differ in all: %d of %d (0 expected: the kernel computes engine/sample's probabilities to the bit)\n", bad, draws)
	if bad > 0 {
		errs = append(errs, fmt.Errorf("cuda-check: sample: %d of %d device ids, kept-set sizes or probability rows differ from engine/sample's", bad, draws))
	}
	return errors.Join(errs...)
}

// randomLogits draws rows (rows, vocab): Gaussian with a standard
// deviation, or small integers (many exact ties, so the kept set's
// boundary falls inside a group of equal probabilities).
func randomLogits(rng *rand.Rand, dist string, rows, vocab int) []float32 {
	out := make([]float32, rows*vocab)
	for i := range out {
		switch dist {
		case "gauss sd 1":
			out[i] = float32(rng.NormFloat64())
		case "gauss sd 6":
			out[i] = float32(6 * rng.NormFloat64())
		default:
			out[i] = float32(rng.IntN(7) - 3)
		}
	}
	return out
}

// devBuf is device memory freed by its free method.
type devBuf struct{ p cu.DevicePtr }

func allocDev(n int) (devBuf, error) {
	p, err := cu.MemAlloc(int64(n))
	if err != nil {
		return devBuf{}, fmt.Errorf("cuMemAlloc(%d): %w", n, err)
	}
	return devBuf{p}, nil
}
func (b devBuf) free() { cu.MemFree(b.p) }

// checkedSampleKernels are the kernels the sample check compares with
// engine/sample: the one steps launch first.
var checkedSampleKernels = []string{"sample_row_bins", "sample_row"}

// deviceDraws runs kernel kern over one row for each uniform number and
// returns the ids and kept-set sizes (and, when probs is not nil, copies the
// probabilities the kernel left into it).
func deviceDraws(d *Device, kern string, row []float32, p sample.Params, us []float64, probs []float32) (ids, keep []int32, err error) {
	v := len(row)
	lg, err := allocDev(4 * v)
	if err != nil {
		return nil, nil, err
	}
	defer lg.free()
	pb, err := allocDev(4 * v)
	if err != nil {
		return nil, nil, err
	}
	defer pb.free()
	out, err := allocDev(8 * len(us))
	if err != nil {
		return nil, nil, err
	}
	defer out.free()
	if err := cu.MemcpyHtoD(lg.p, unsafe.Pointer(&row[0]), int64(4*v)); err != nil {
		return nil, nil, err
	}
	for j, u := range us { // one launch per draw: ids at out[j], sizes at out[len(us)+j]
		info := out.p + cu.DevicePtr(4*(len(us)+j))
		if err := enqueueSampleWith(d, kern, cu.Stream{}, out.p+cu.DevicePtr(4*j), info, lg.p, pb.p, v, p, []float64{u}); err != nil {
			return nil, nil, err
		}
	}
	res := make([]int32, 2*len(us))
	if err := cu.MemcpyDtoH(unsafe.Pointer(&res[0]), out.p, int64(4*len(res))); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", kern, err)
	}
	if probs != nil {
		if err := cu.MemcpyDtoH(unsafe.Pointer(&probs[0]), pb.p, int64(4*v)); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", kern, err)
		}
	}
	return res[:len(us)], res[len(us):], nil
}

// compareSample runs every setting over each row with 64 uniform numbers
// and prints how often the device's id and kept-set size equal the host's;
// it returns the number of ids that differ (printing the first few) and of
// draws.
func compareSample(d *Device, kern string, rows []float32, vocab int, rng *rand.Rand, name string, stdout io.Writer) (diff, draws int, err error) {
	const perRow = 64
	probs, devProbs := make([]float32, vocab), make([]float32, vocab)
	for _, p := range sampleSettings {
		same, keepSame, total, probSame := 0, 0, 0, 0
		for r := 0; r < len(rows)/vocab; r++ {
			row := rows[r*vocab : (r+1)*vocab]
			us := make([]float64, perRow)
			for j := range us {
				us[j] = rng.Float64()
			}
			ids, keep, err := deviceDraws(d, kern, row, p, us, devProbs)
			if err != nil {
				return 0, 0, err
			}
			(&sample.Sampler{P: p}).Probs(probs, row)
			bitsSame := true
			for i := range probs {
				if math.Float32bits(probs[i]) != math.Float32bits(devProbs[i]) {
					if bitsSame && diff < 5 {
						fmt.Fprintf(stdout, "  probabilities differ: %s %+v row %d: p[%d] host %.9g device %.9g\n", name, p, r, i, probs[i], devProbs[i])
					}
					bitsSame = false
				}
			}
			if bitsSame {
				probSame++
			} else {
				diff++
			}
			kept := keptSize(probs)
			for j, u := range us {
				want := sample.DrawU(probs, u)
				total++
				if ids[j] == want {
					same++
				} else if diff++; diff <= 5 {
					fmt.Fprintf(stdout, "  differs: %s %+v row %d u=%.17g host %d (p=%.9g) device %d (p=%.9g), kept host %d device %d\n",
						name, p, r, u, want, probs[want], ids[j], probs[min(max(ids[j], 0), int32(vocab-1))], kept, keep[j])
				}
				if int(keep[j]) == kept {
					keepSame++
				} else if ids[j] == want { // counted once a draw
					diff++
				}
			}
		}
		fmt.Fprintf(stdout, "%-44s %-26s %8d/%-5d %8d/%-5d %6d/%-3d\n", name, fmtParams(p), same, total, keepSame, total, probSame, len(rows)/vocab)
		draws += total
	}
	return diff, draws, nil
}

func fmtParams(p sample.Params) string {
	return fmt.Sprintf("T=%g k=%d p=%g", p.Temperature, p.TopK, p.TopP)
}

// timeSample prints sample_row's device time per row (wall time of 50
// launches on one stream after a warm-up, over the count).
func timeSample(d *Device, kern string, row []float32, p sample.Params, stdout io.Writer) error {
	const reps = 50
	v := len(row)
	lg, err := allocDev(4 * v)
	if err != nil {
		return err
	}
	defer lg.free()
	pb, err := allocDev(4 * v)
	if err != nil {
		return err
	}
	defer pb.free()
	out, err := allocDev(4)
	if err != nil {
		return err
	}
	defer out.free()
	if err := cu.MemcpyHtoD(lg.p, unsafe.Pointer(&row[0]), int64(4*v)); err != nil {
		return err
	}
	var t0 time.Time
	for i := -10; i < reps; i++ {
		if i == 0 {
			if err := cu.Synchronize(); err != nil {
				return err
			}
			t0 = time.Now()
		}
		if err := enqueueSampleWith(d, kern, cu.Stream{}, out.p, 0, lg.p, pb.p, v, p, []float64{0.5}); err != nil {
			return err
		}
	}
	if err := cu.Synchronize(); err != nil {
		return fmt.Errorf("sample_row: %w", err)
	}
	fmt.Fprintf(stdout, "%s time V=%-7d %-26s %7.1f us a row\n", kern, v, fmtParams(p), float64(time.Since(t0).Microseconds())/reps)
	return nil
}

// chiSquareSample draws 20,000 device samples from one row (fresh uniform
// numbers) and compares their counts with the host's probabilities:
// Pearson's chi-square over the tokens expected at least 5 times (the rest
// pooled), printed with its degrees of freedom and z = (X2-dof)/sqrt(2 dof);
// |z| >= 6 fails.
func chiSquareSample(d *Device, row []float32, p sample.Params, name string, stdout io.Writer) error {
	const n = 20000
	rng := rand.New(rand.NewPCG(7, 7))
	us := make([]float64, n)
	for i := range us {
		us[i] = rng.Float64()
	}
	ids, _, err := deviceDraws(d, sampleKernelFor(len(row)), row, p, us, nil)
	if err != nil {
		return err
	}
	probs := make([]float32, len(row))
	(&sample.Sampler{P: p}).Probs(probs, row)
	count := make([]float64, len(row))
	for _, id := range ids {
		if id < 0 || int(id) >= len(row) {
			return fmt.Errorf("chi-square %s: device drew id %d outside the vocabulary", name, id)
		}
		count[id]++
	}
	var x2, poolE, poolO float64
	dof, zeroDrawn := -1, 0
	for i, q := range probs {
		e := n * float64(q)
		switch {
		case q == 0 && count[i] > 0:
			zeroDrawn++
		case e >= 5:
			x2 += (count[i] - e) * (count[i] - e) / e
			dof++
		default:
			poolE += e
			poolO += count[i]
		}
	}
	if poolE > 0 {
		x2 += (poolO - poolE) * (poolO - poolE) / poolE
		dof++
	}
	z := (x2 - float64(dof)) / math.Sqrt(2*float64(max(dof, 1)))
	fmt.Fprintf(stdout, "chi-square %-18s %-26s %d draws: X2 %.1f, dof %d, z %.2f; draws of a token the host gives 0: %d\n",
		name, fmtParams(p), n, x2, dof, z, zeroDrawn)
	if zeroDrawn > 0 || math.Abs(z) >= 6 {
		return fmt.Errorf("chi-square %s %s: z %.2f, %d draws outside the kept set", name, fmtParams(p), z, zeroDrawn)
	}
	return nil
}

// gocoderLogits runs gocoder-14m-hf over the first two public prompts and
// 24 greedy tokens after each and returns the logits rows (rows, 4096).
func gocoderLogits(ctx context.Context, d *Device, models string) ([]float32, error) {
	ref, err := readRef(models)
	if err != nil {
		return nil, err
	}
	t, closeT, err := loadTarget1k(d, filepath.Join(models, "gocoder-14m-hf"))
	if err != nil {
		return nil, err
	}
	defer closeT()
	var rows []float32
	for _, pr := range ref.Prompts[:2] {
		if err := t.Rewind(0); err != nil {
			return nil, err
		}
		l, err := prefill(ctx, t, pr.PromptIDs)
		if err != nil {
			return nil, err
		}
		for i := 0; i < 24; i++ {
			rows = append(rows, l...)
			next := sample.Argmax(l)
			if l, err = t.Forward(ctx, model.Batch{Tokens: []int32{next}, Logits: model.LogitsLast}); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

// loadTarget1k loads the model at path on d as one rank with a cache of
// 1024 positions (the gocoder checks); the func closes it.
func loadTarget1k(d *Device, path string) (*Target, func(), error) {
	src, err := loader.Open(path, loader.Options{})
	if err != nil {
		return nil, nil, err
	}
	defer src.Close()
	w, err := model.LoadWeights(src, model.Shard{Rank: 0, Size: 1})
	if err != nil {
		return nil, nil, err
	}
	t, err := Load(d, w, 1024)
	if err != nil {
		return nil, nil, err
	}
	return t, func() { t.Close() }, nil
}

// hostSampled hides a target's SampleIDs: the loop samples on the host over
// Forward's logits, as before device sampling (the "before" of the tok/s
// comparison).
type hostSampled struct{ spec.Target }

// sampleGenerate runs spec.Generate with temperature 0.8, top-p 0.9 (seed
// 7) through SampleIDs and through host sampling, on gocoder-14m (the 12
// public prompts, 64 tokens) and on the llama-8b shape (synthetic bf16, one
// prompt, 48 tokens): tokens equal (required: the device computes the
// host's probabilities to the bit), and decode tok/s of both.
func sampleGenerate(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	ref, err := readRef(models)
	if err != nil {
		return err
	}
	gc, closeGC, err := loadTarget1k(d, filepath.Join(models, "gocoder-14m-hf"))
	if err != nil {
		return err
	}
	var prompts [][]int32
	for _, pr := range ref.Prompts {
		prompts = append(prompts, pr.PromptIDs)
	}
	fmt.Fprintf(stdout, "\nspec.Generate, T=0.8 top-p 0.9 seed 7: device sampling (SampleIDs) against host sampling over Forward's logits\n")
	fmt.Fprintf(stdout, "%-34s %12s %14s %14s %8s\n", "model", "tokens equal", "device tok/s", "host tok/s", "speedup")
	err = compareGenerate(ctx, gc, "gocoder-14m-hf (12 prompts)", prompts, 64, stdout)
	closeGC()
	if err != nil {
		return err
	}
	cfg := llama8bConfig
	big, err := LoadSynthetic(d, cfg, 1024, 1)
	if err != nil {
		return err
	}
	defer big.Close()
	return compareGenerate(ctx, big, "llama-8b shape (synthetic bf16)", prompts[:1], 48, stdout)
}

func compareGenerate(ctx context.Context, t *Target, name string, prompts [][]int32, n int, stdout io.Writer) error {
	run := func(tgt spec.Target) ([][]int32, float64, error) {
		var toks [][]int32
		var tokens int
		var dec time.Duration
		for i, pr := range prompts {
			smp := sample.New(sample.Params{Temperature: 0.8, TopP: 0.9}, 7+uint64(i))
			res, err := spec.Generate(ctx, tgt, pr, spec.Options{MaxTokens: n, EOS: -1, Sampler: smp})
			if err != nil {
				return nil, 0, err
			}
			toks = append(toks, res.Tokens)
			tokens += len(res.Tokens) - 1
			dec += res.Decode
		}
		return toks, float64(tokens) / dec.Seconds(), nil
	}
	if _, _, err := run(t); err != nil { // warm-up: graphs captured
		return err
	}
	dev, devRate, err := run(t)
	if err != nil {
		return err
	}
	host, hostRate, err := run(hostSampled{t})
	if err != nil {
		return err
	}
	same := 0
	for i := range dev {
		if slices.Equal(dev[i], host[i]) {
			same++
		}
	}
	fmt.Fprintf(stdout, "%-34s %8d/%-3d %14.1f %14.1f %7.2fx\n", name, same, len(dev), devRate, hostRate, devRate/hostRate)
	if same != len(dev) {
		return fmt.Errorf("%s: %d of %d sampled generations differ between SampleIDs and host sampling (same logits, same seed)", name, len(dev)-same, len(dev))
	}
	return nil
}
