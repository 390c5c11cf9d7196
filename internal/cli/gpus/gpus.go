// Package gpus is `rigscope gpus`: per-GPU telemetry and the topology
// matrix from NVML (package gpu), once or --watch.
package gpus

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"

	"rigscope/gpu"
	"rigscope/internal/cli"
)

// Command is `rigscope gpus`.
var Command = cli.Command{
	Name:    "gpus",
	Summary: "print per-GPU telemetry and the topology matrix (NVML), once or --watch",
	Run:     runGPUs,
}

// openGPUSampler opens NVML; tests replace it with a mock.
var openGPUSampler = gpu.Open

func runGPUs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gpus", flag.ContinueOnError)
	fs.SetOutput(stderr)
	watch := fs.Bool("watch", false, "keep printing every --interval until interrupted")
	interval := fs.Duration("interval", gpu.DefaultInterval, "sampling interval")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *interval <= 0 {
		return fmt.Errorf("gpus: --interval %v must be positive: %w", *interval, cli.ErrUsage)
	}
	s := openGPUSampler()
	defer s.Close()
	if err := s.Err(); err != nil {
		// Informational: a machine without NVIDIA GPUs is not an error.
		fmt.Fprintf(stdout, "%v\nno NVIDIA GPU telemetry on this machine (exit status 0: nothing to show is not a failure)\n", err)
		return nil
	}
	if s.Count() == 0 {
		fmt.Fprintln(stdout, "NVML found no GPUs")
		return nil
	}
	if !*watch {
		// Two samples: rates from cumulative counters need a difference.
		s.SampleOnce()
		if !sleepCtx(ctx, min(*interval, time.Second)) {
			return nil
		}
		s.SampleOnce()
		writeGPUTable(stdout, s.Snapshot())
		fmt.Fprintln(stdout)
		return writeTopology(stdout, s.Topology())
	}
	if err := writeTopology(stdout, s.Topology()); err != nil {
		return err
	}
	s.Start(ctx, *interval)
	for {
		if !sleepCtx(ctx, *interval) {
			return nil
		}
		fmt.Fprintf(stdout, "\n%s\n", time.Now().Format("15:04:05.000"))
		writeGPUTable(stdout, s.Snapshot())
	}
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func writeTopology(w io.Writer, t *gpu.Topology) error {
	if t == nil {
		_, err := fmt.Fprintln(w, "topology: n/a")
		return err
	}
	if err := t.WriteMatrix(w); err != nil {
		return fmt.Errorf("gpus: writing topology: %w", err)
	}
	return nil
}

// writeGPUTable prints one row per GPU; unavailable readings as "n/a
// (reason)".
func writeGPUTable(w io.Writer, snaps []gpu.GPUSnapshot) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tNAME\tPCIe NOW\tPCIe MAX\tTX\tRX\tUTIL\tMEMORY\tPOWER\tSM CLOCK\tTEMP")
	sources := map[string]bool{}
	for _, g := range snaps {
		l := g.Latest
		mem := l.MemUsed.Format(func(v float64) string { return humanize.IBytes(uint64(v)) })
		if l.MemUsed.OK && l.MemTotal.OK {
			mem += " / " + humanize.IBytes(uint64(l.MemTotal.Value))
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			g.Index, g.Name,
			gpu.LinkString(l.LinkGen, l.LinkWidth), gpu.LinkString(g.MaxLinkGen, g.MaxLinkWidth),
			l.TX.Format(rate), l.RX.Format(rate),
			l.Util.Format(unit("%.0f %%")), mem,
			l.Power.Format(unit("%.1f W")), l.SMClock.Format(unit("%.0f MHz")), l.Temp.Format(unit("%.0f °C")))
		sources[g.ThroughputSource] = true
	}
	tw.Flush()
	var src []string
	for s := range sources {
		src = append(src, s)
	}
	if len(src) > 0 {
		fmt.Fprintf(w, "TX/RX measured with: %s\n", strings.Join(src, ", "))
	}
}

func rate(v float64) string { return humanize.Bytes(uint64(v)) + "/s" }

func unit(format string) func(float64) string {
	return func(v float64) string { return fmt.Sprintf(format, v) }
}
