//go:build cuda

package cuda

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorgonia.org/cu"

	"rigscope/engine"
)

var checkRunLogs = flag.String("runlogs", "", "the runlog check writes its run logs here (default: a temporary folder, removed after)")

// checkNCCL makes communicators with each kind of run setting through the
// step's own path (ncclComms.ensure with libnccl: ncclCommInitRankConfig,
// the environment around it, the probe allreduce), one rank per visible
// GPU up to 2 (one GPU: one-rank communicators, which NCCL makes and
// tunes but sums without an algorithm), and checks that communicators are
// made again only when the settings change; that a buffer size other than
// the one NCCL read for the process is refused; that NCCL's own refusals
// (bypassing Check) come back with NCCL's message; and that a TP 2 run
// through the engine with nccl is refused with the reason on one GPU (or
// runs, made once and reused, on two). With NCCL_DEBUG=INFO and
// NCCL_DEBUG_SUBSYS=INIT,ENV in the environment NCCL's log shows the
// channels ("N coll channels") and the buffer size each set asked for.
func checkNCCL(ctx context.Context, d *Device, models string, stdout io.Writer) error {
	v, err := NCCLVersion()
	if err != nil {
		return fmt.Errorf("nccl: %w", err)
	}
	n, err := Count()
	if err != nil {
		return err
	}
	gpus := []int{d.Ordinal}
	if n >= 2 {
		gpus = []int{0, 1}
	}
	fmt.Fprintf(stdout, "\nNCCL %s, %d GPU(s) visible: communicators on GPUs %v, made through the step's path with each run's settings\n%-44s %-8s %-9s %s\n",
		v, n, gpus, "settings", "made", "ms", "error")
	var fails []string
	var c ncclComms
	for _, st := range []struct {
		s       NCCLSettings
		created bool
		bad     string // "" = made or kept; else what the refusal must say
	}{
		{NCCLSettings{BuffSize: 8 << 20}, true, ""}, // the process's first: NCCL reads NCCL_BUFFSIZE now
		{NCCLSettings{BuffSize: 8 << 20}, false, ""},
		{NCCLSettings{}, true, ""}, // the buffer size left to the process's (8M)
		{NCCLSettings{}, false, ""},
		{NCCLSettings{Proto: "LL"}, true, ""},
		{NCCLSettings{Proto: "LL128", Algo: "Ring"}, true, ""},
		{NCCLSettings{Proto: "Simple", Algo: "Tree"}, true, ""},
		{NCCLSettings{MaxChannels: 2}, true, ""},
		{NCCLSettings{MaxChannels: 2}, false, ""},
		{NCCLSettings{MinChannels: 4, MaxChannels: 4}, true, ""},
		{NCCLSettings{MinChannels: 3}, true, ""},
		{NCCLSettings{BuffSize: 2 << 20}, false, "NCCL reads it once per process"},
		{NCCLSettings{Algo: "NVLS"}, false, "NCCL_NVLS_ENABLE=0"},
	} {
		t0 := time.Now()
		created, err := c.ensure(driverNCCL{}, gpus, st.s)
		if e := cu.SetCurrentContext(d.ctx); e != nil && err == nil {
			err = e
		}
		msg := "-"
		if err != nil {
			msg = err.Error()
		}
		fmt.Fprintf(stdout, "%-44s %-8v %-9.1f %s\n", st.s, created, float64(time.Since(t0).Microseconds())/1e3, msg)
		switch {
		case st.bad == "" && err != nil:
			fails = append(fails, fmt.Sprintf("%s: %v", st.s, err))
		case st.bad != "" && (err == nil || !strings.Contains(err.Error(), st.bad)):
			fails = append(fails, fmt.Sprintf("%s: %v, want a refusal saying %q", st.s, err, st.bad))
		case created != st.created:
			fails = append(fails, fmt.Sprintf("%s: made %v, want %v", st.s, created, st.created))
		}
	}
	c.close(driverNCCL{})
	fmt.Fprintf(stdout, "buffer size in effect for the process: %s\n", buffName(ncclProc.buffInEffect()))

	// NCCL's own refusals, with its message (Check would refuse these
	// first; ncclMake is the creation without it). A one-rank communicator
	// is not tuned (ncclTopoTuneModel returns before reading NCCL_PROTO and
	// NCCL_ALGO when nRanks <= 1: seen on the H200, NCCL 2.28.3), so the
	// names are refused only with two or more GPUs; the config's channel
	// bounds are checked at any size.
	fmt.Fprintf(stdout, "NCCL's own refusals (Check bypassed):\n")
	for _, st := range []struct {
		s     NCCLSettings
		want  string
		tuned bool // NCCL reads it only when it tunes (two or more ranks)
	}{
		{NCCLSettings{Proto: "LL256"}, "LL256", true},
		{NCCLSettings{Algo: "Butterfly"}, "Butterfly", true},
		{NCCLSettings{MinChannels: 8, MaxChannels: 2}, "8/2", false},
	} {
		comms, err := ncclMake(gpus, st.s, ncclProc.buffInEffect(), "")
		cu.SetCurrentContext(d.ctx)
		if err == nil {
			ncclDestroy(comms)
			if st.tuned && len(gpus) < 2 {
				fmt.Fprintf(stdout, "  %#v: made: a one-rank communicator is not tuned, so NCCL never reads the name\n", st.s)
				continue
			}
			fails = append(fails, fmt.Sprintf("NCCL made communicators with %#v", st.s))
			fmt.Fprintf(stdout, "  %#v: made (NCCL did not refuse)\n", st.s)
			continue
		}
		fmt.Fprintf(stdout, "  %#v: %v\n", st.s, err)
		if !strings.Contains(err.Error(), "ncclResult") {
			fails = append(fails, fmt.Sprintf("%#v: %v, want NCCL's error", st.s, err))
		}
		if !strings.Contains(err.Error(), st.want) {
			fmt.Fprintf(stdout, "  (NCCL's last-error text does not name %q: the message is ncclGetErrorString's only)\n", st.want)
		}
	}

	// TP 2 through the engine with nccl and settings.
	e, err := engine.Open(ctx, filepath.Join(models, "gocoder-14m-hf"), engine.Options{Device: "cuda", CtxLen: 512})
	if err != nil {
		return errors.Join(append(errsOf(fails), err)...)
	}
	defer e.Close()
	for i, s := range []NCCLSettings{{Proto: "LL"}, {Proto: "LL"}, {Proto: "Simple", MaxChannels: 2}} {
		st, err := e.Run(ctx, engine.RunConfig{Prompt: "func main() {", MaxTokens: 16, IgnoreEOS: true, TP: 2, AllReduce: "nccl", NCCL: s}, nil)
		if n < 2 {
			fmt.Fprintf(stdout, "TP 2 nccl %s on one GPU: %v\n", s, err)
			if err == nil || !strings.Contains(err.Error(), "two ranks on one GPU") {
				fails = append(fails, fmt.Sprintf("TP 2 nccl on one GPU: %v, want the refusal", err))
			}
			break
		}
		if err != nil {
			fails = append(fails, fmt.Sprintf("TP 2 nccl %s: %v", s, err))
			continue
		}
		fmt.Fprintf(stdout, "TP 2 nccl %s: %.1f tok/s, allreduce share %.3f, p50 %.1f us, nccl %+v\n", s, st.DecodeTokensPerS, st.AllReduceShare, st.AllReduceP50Us, st.NCCL)
		if want := i != 1; st.NCCL == nil || st.NCCL.Created != want {
			fails = append(fails, fmt.Sprintf("TP 2 nccl run %d (%s): nccl %+v, want created %v", i, s, st.NCCL, want))
		}
	}
	return errors.Join(errsOf(fails)...)
}

func errsOf(msgs []string) []error {
	var out []error
	for _, m := range msgs {
		out = append(out, errors.New("nccl: "+m))
	}
	return out
}

// checkRunLog runs the engine (what generate and the panel run) at TP 2
// on this GPU with each step backend and the n-gram drafter, and at TP 4
// with oneshot, writing each run's log to -runlogs: the logs the panel
// replays (rigscope --replay LOG --tab dashboard) to show a GPU run's
// allreduce latency, bytes and step split. It prints each run's figures.
func checkRunLog(ctx context.Context, models string, stdout io.Writer) error {
	dir := *checkRunLogs
	if dir == "" {
		tmp, err := os.MkdirTemp("", "rigscope-runlogs")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	e, err := engine.Open(ctx, filepath.Join(models, "gocoder-14m-hf"), engine.Options{Device: "cuda", CtxLen: 1024, LogDir: dir})
	if err != nil {
		return err
	}
	defer e.Close()
	fmt.Fprintf(stdout, "\nrun logs of GPU runs (engine, gocoder-14m-hf, n-gram k=4, 256 tokens) in %s\n%-3s %-8s %9s %8s %9s %9s %12s %s\n",
		dir, "tp", "backend", "tok/s", "ar share", "p50 us", "p99 us", "bytes/rank", "log")
	var errs []error
	for _, rn := range []struct {
		tp      int
		backend string
	}{{1, ""}, {2, "oneshot"}, {2, "twoshot"}, {2, "host"}, {2, "auto"}, {4, "oneshot"}} {
		st, err := e.Run(ctx, engine.RunConfig{Prompt: "package main\n\nimport \"fmt\"\n\nfunc main() {\n", MaxTokens: 256, IgnoreEOS: true, TP: rn.tp, AllReduce: rn.backend,
			Drafter: engine.DrafterConfig{Kind: "ngram", K: 4, NgramMin: 1, NgramMax: 3}}, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("runlog: tp %d %s: %w", rn.tp, rn.backend, err))
			continue
		}
		var perRank int64
		if len(st.BytesSent) > 0 {
			perRank = st.BytesSent[0]
		}
		fmt.Fprintf(stdout, "%-3d %-8s %9.1f %8.3f %9.2f %9.2f %12d %s\n", rn.tp, nameOr(rn.backend, "-"), st.DecodeTokensPerS, st.AllReduceShare, st.AllReduceP50Us, st.AllReduceP99Us, perRank, filepath.Base(st.LogPath))
		if rn.tp > 1 && (st.AllReduceMs <= 0 || len(st.AllReduceLatency) == 0 || perRank <= 0) {
			errs = append(errs, fmt.Errorf("runlog: tp %d %s: no allreduce measured (%.3f ms, %d histograms, %d bytes)", rn.tp, rn.backend, st.AllReduceMs, len(st.AllReduceLatency), perRank))
		}
	}
	return errors.Join(errs...)
}
