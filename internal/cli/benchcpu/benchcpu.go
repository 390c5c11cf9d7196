// Package benchcpu is `rigscope bench-cpu`: CPU decode and prefill
// tokens/s against llama.cpp (internal/llamacpp's driver) on the same GGUF
// files, the two engines alternating within each round, with both
// processes' peak resident memory. rigscope's side runs in a worker
// process of its own (`bench-cpu --worker`, worker.go), so each engine is
// measured in a fresh process.
package benchcpu

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"rigscope/engine/loader/synthetic"
	"rigscope/internal/cli"
	"rigscope/internal/llamacpp"
)

// Command is `rigscope bench-cpu`.
var Command = cli.Command{Name: "bench-cpu", Summary: "CPU decode/prefill tokens/s against llama.cpp, alternating, same GGUF files", Run: runBenchCPU}

// benchCPUFlags are bench-cpu's flags.
type benchCPUFlags struct {
	models    string
	threads   string
	rounds    int
	nGen      int
	nGenBig   int
	nPP       int
	peer      string
	peerBins  string
	exportDir string
	worker    bool
	model     string
	nThreads  int
	reps      int
	profile   string
	memTrace  bool
}

// benchResult is what one measuring process reports (tokens/s per repetition).
type benchResult struct {
	TG    []float64 `json:"tg"`
	PP    []float64 `json:"pp"`
	RSSKB int64     `json:"rss_kb"`
	// BaseKB is the process's resident set before the model is opened: the
	// binary and the Go runtime, not the model.
	BaseKB int64   `json:"base_rss_kb"`
	KVMB   float64 `json:"kv_mb,omitempty"`
}

func runBenchCPU(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f benchCPUFlags
	fs := flag.NewFlagSet("bench-cpu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.models, "models", "../shared/models/gocoder-14m.Q8_0.gguf,../shared/models/gocoder-draft-1m.F16.gguf,synthetic:llama-1b?dtype=q8_0",
		"comma-separated GGUF files; synthetic:PRESET?dtype=q8_0 is exported to --export-dir first")
	fs.StringVar(&f.threads, "threads", "1,2", "comma-separated thread counts")
	fs.IntVar(&f.rounds, "rounds", 3, "rounds; each runs rigscope then llama.cpp (order alternates per round)")
	fs.IntVar(&f.reps, "reps", 3, "timed repetitions per process (after one warm-up)")
	fs.IntVar(&f.nGen, "tg", 256, "decode tokens after the 5-token prompt")
	fs.IntVar(&f.nGenBig, "tg-big", 32, "decode tokens for models over 500 MB (both engines)")
	fs.IntVar(&f.nPP, "pp", 512, "prompt-processing batch")
	fs.StringVar(&f.peer, "peer", llamacpp.DefaultDriver, "llama.cpp driver (../shared/peers/llamacpp/setup.sh builds it)")
	fs.StringVar(&f.peerBins, "peer-bins", llamacpp.DefaultBins, "LLAMA_BINS for the peer")
	fs.StringVar(&f.exportDir, "export-dir", os.TempDir(), "where synthetic models are written as GGUF (reused when present)")
	fs.BoolVar(&f.worker, "worker", false, "internal: measure one model in this process and print JSON")
	fs.StringVar(&f.model, "model", "", "internal: the model for --worker")
	fs.IntVar(&f.nThreads, "n", 1, "internal: threads for --worker")
	fs.StringVar(&f.profile, "cpuprofile", "", "with --worker: write a CPU profile of the timed runs to this file")
	fs.BoolVar(&f.memTrace, "memtrace", false, "with --worker: print the process's memory (/proc/self/status, Go heap) at each stage to stderr")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if f.worker {
		var trace io.Writer
		if f.memTrace {
			trace = stderr
		}
		res, err := benchWorker(ctx, f.model, f.nThreads, f.nGen, f.nPP, f.reps, f.profile, trace)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	if _, err := os.Stat(f.peer); err != nil {
		return fmt.Errorf("bench-cpu: llama.cpp peer %s: %w (build it with ../shared/peers/llamacpp/setup.sh)", f.peer, err)
	}
	var threads []int
	for _, s := range strings.Split(f.threads, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 256 {
			return fmt.Errorf("bench-cpu: --threads %q: want numbers 1..256", f.threads)
		}
		threads = append(threads, n)
	}
	peer := llamacpp.Driver{Path: f.peer, Bins: f.peerBins}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench-cpu: %w", err)
	}
	type row struct {
		file, metric   string
		threads        int
		ours, peer     []float64
		oursRSS, peerR int64
		oursBase       int64 // the worker's RSS before the model, in the run of oursRSS
		size           int64
		kvMB           float64
	}
	var rows []*row
	for _, m := range strings.Split(f.models, ",") {
		path, err := benchFile(m, f.exportDir, stderr)
		if err != nil {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("bench-cpu: %w", err)
		}
		nGen := f.nGen
		if st.Size() > 500<<20 {
			nGen = f.nGenBig
		}
		for _, th := range threads {
			tg := &row{file: filepath.Base(path), metric: fmt.Sprintf("tg%d", nGen), threads: th, size: st.Size()}
			pp := &row{file: filepath.Base(path), metric: fmt.Sprintf("pp%d", f.nPP), threads: th, size: st.Size()}
			rows = append(rows, tg, pp)
			for r := 0; r < f.rounds; r++ {
				for i := 0; i < 2; i++ {
					if (i+r)%2 == 0 {
						cmd := exec.CommandContext(ctx, self, "bench-cpu", "--worker", "--model", path, "--n", strconv.Itoa(th),
							"--tg", strconv.Itoa(nGen), "--pp", strconv.Itoa(f.nPP), "--reps", strconv.Itoa(f.reps))
						out, rss, err := runMeasured(cmd)
						if err != nil {
							return fmt.Errorf("bench-cpu: rigscope on %s: %w\n%s", path, err, out)
						}
						var res benchResult
						if err := json.Unmarshal(lastLine(out), &res); err != nil {
							return fmt.Errorf("bench-cpu: rigscope worker output %q: %w", out, err)
						}
						tg.ours, pp.ours = append(tg.ours, res.TG...), append(pp.ours, res.PP...)
						if rss > tg.oursRSS {
							tg.oursRSS, tg.oursBase = rss, res.BaseKB
						}
						tg.kvMB = res.KVMB
					} else {
						cmd := peer.Command(ctx, path, th, nGen, f.nPP, f.reps)
						out, rss, err := runMeasured(cmd)
						if err != nil {
							return fmt.Errorf("bench-cpu: llama.cpp on %s: %w\n%s", path, err, out)
						}
						t, p, err := llamacpp.ParseRuns(out)
						if err != nil {
							return fmt.Errorf("bench-cpu: llama.cpp on %s: %w", path, err)
						}
						tg.peer, pp.peer = append(tg.peer, t...), append(pp.peer, p...)
						tg.peerR = max(tg.peerR, rss)
					}
				}
				fmt.Fprintf(stderr, "%s threads=%d round %d: rigscope tg %.0f pp %.0f, llama.cpp tg %.0f pp %.0f\n", tg.file, th, r+1,
					median(tg.ours), median(pp.ours), median(tg.peer), median(pp.peer))
			}
		}
	}
	fmt.Fprintf(stdout, "\n| file | threads | workload | rigscope tok/s | llama.cpp tok/s | ratio | rigscope peak RSS | llama.cpp peak RSS | RSS budget (file+KV+20%%) | rigscope RSS before the model |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		o, p := median(r.ours), median(r.peer)
		fmt.Fprintf(stdout, "| %s | %d | %s | %.1f | %.1f | %.2f | %s |\n", r.file, r.threads, r.metric, o, p, o/p,
			rssCells(r.oursRSS, r.peerR, r.oursBase, r.size, r.kvMB))
	}
	fmt.Fprintf(stdout, "\nmedians over %d rounds x %d repetitions; the two engines alternate within each round\n", f.rounds, f.reps)
	return nil
}

// rssCells are the table's last four cells (KiB in, MiB out): peak RSS of
// both engines, the budget (file + KV cache + 20%), and the worker's RSS
// before it opened the model. A row without a measurement (pp) has them
// empty.
func rssCells(oursKB, peerKB, baseKB, fileBytes int64, kvMB float64) string {
	if oursKB <= 0 {
		return " | | | "
	}
	budget := (float64(fileBytes)/(1<<20) + kvMB) * 1.2
	base := ""
	if baseKB > 0 {
		base = fmt.Sprintf("%.0f MiB", float64(baseKB)/1024)
	}
	return fmt.Sprintf("%.0f MiB | %.0f MiB | %.0f MiB | %s", float64(oursKB)/1024, float64(peerKB)/1024, budget, base)
}

// benchFile returns a GGUF path for spec, exporting synthetic presets once.
func benchFile(spec, dir string, log io.Writer) (string, error) {
	if !strings.HasPrefix(spec, "synthetic:") {
		return spec, nil
	}
	name := strings.NewReplacer("synthetic:", "rigscope-", "?", "-", "=", "-", "&", "-").Replace(spec) + ".gguf"
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	src, err := synthetic.Open(spec)
	if err != nil {
		return "", fmt.Errorf("bench-cpu: %w", err)
	}
	fmt.Fprintf(log, "exporting %s to %s ...\n", spec, path)
	tmp := path + ".tmp"
	fh, err := os.Create(tmp)
	if err != nil {
		return "", fmt.Errorf("bench-cpu: %w", err)
	}
	if err := src.WriteGGUF(fh); err != nil {
		fh.Close()
		os.Remove(tmp)
		return "", fmt.Errorf("bench-cpu: %w", err)
	}
	if err := fh.Close(); err != nil {
		return "", fmt.Errorf("bench-cpu: %w", err)
	}
	return path, os.Rename(tmp, path)
}

// runMeasured runs cmd and returns its output and peak RSS in KiB.
func runMeasured(cmd *exec.Cmd) ([]byte, int64, error) {
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	var rss int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss
		}
	}
	return buf.Bytes(), rss, err
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
