// Package cli is rigscope's command line: what a headless subcommand is
// (Command), finding one by name, the help text, interrupts, the exit
// status, and the flag helpers every command shares (ParseFlags,
// MetricsAddrFlag and StartMetrics).
//
// Each command lives in a package of its own under internal/cli/ (generate,
// bench, benchcpu, serve, gpus, allreduce, cudabench); the panel, opened
// when no command is named, is internal/panel. Package main only lists
// them. Arrows point down: main imports the command packages, they import
// cli and the engine; cli imports no command, and no command imports
// another.
//
// Adding a command:
//
//  1. Make a package under internal/cli/ (one job: one command, or a group
//     that shares its code, like allreduce) that exports
//     var Command = cli.Command{Name: "NAME", Summary: "one help line", Run: run}.
//  2. run(ctx, args, stdout, stderr) builds a flag.FlagSet named NAME with
//     its output set to stderr, parses it with ParseFlags, writes results
//     to stdout and progress or warnings to stderr, stops when ctx ends,
//     and returns nil or an error whose message starts "NAME: ". It never
//     calls os.Exit and never prints the error itself: Main prints it once
//     as "rigscope: ..." and picks the exit status.
//  3. Add NAME's Command to the list in main.go (a command that needs the
//     cuda build tag goes in cuda.go instead). `rigscope help` lists it.
//  4. Test it in its package by calling Command.Run; the hostile-input
//     table at the repository root (hostile_test.go) runs the built binary.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"rigscope/engine/tp"
)

// Command is one headless subcommand.
type Command struct {
	Name    string
	Summary string // one line in `rigscope help`
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// Program is the whole command line: the headless commands and the panel.
type Program struct {
	Commands []Command
	// Panel parses the panel's flags and opens the window when no command
	// is named; nil in a headless build.
	Panel func(ctx context.Context, args []string) error
}

// ErrUsage marks an error whose message already explains the usage.
var ErrUsage = errors.New("usage")

// interruptGrace is how long a command has to stop after the first
// interrupt before the process exits anyway (a second interrupt exits at
// once).
const interruptGrace = 3 * time.Second

// ExitInterrupted is the shell's status for a process ended by SIGINT.
const ExitInterrupted = 130

// Main runs the command line args (os.Args[1:]) and returns the process's
// exit status.
func (p Program) Main(args []string) int {
	ctx := interruptible()
	err := p.Dispatch(ctx, args, os.Stdout, os.Stderr)
	return exitStatus(ctx, err, os.Stderr)
}

// interruptible returns a context that the first SIGINT or SIGTERM
// cancels, so loads and runs stop at their next check; if the command has
// not ended interruptGrace later, or at a second signal, the process exits.
func interruptible() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		select {
		case <-sigs:
		case <-time.After(interruptGrace):
		}
		fmt.Fprintln(os.Stderr, "rigscope: interrupted")
		os.Exit(ExitInterrupted)
	}()
	return ctx
}

// exitStatus reports err (once) and returns the process's status: 0, 1 for
// an error, 130 when interrupted (even by a command that returned nil).
func exitStatus(ctx context.Context, err error, stderr io.Writer) int {
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 1 // the flag package has printed the usage
	case ctx.Err() != nil && err != nil:
		fmt.Fprintln(stderr, "rigscope: interrupted:", err)
		return ExitInterrupted
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "rigscope: interrupted")
		return ExitInterrupted
	case err != nil:
		fmt.Fprintln(stderr, "rigscope:", err)
		return 1
	}
	return 0
}

// ParseFlags parses a command's flags and refuses positional arguments:
// no command takes any, and one left over is a mistyped flag or value.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (flags are --name value; `rigscope %s -h` lists them)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

// Dispatch runs the command args names, `help`, or (no command) the panel.
func (p Program) Dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name := args[0]
		if name == "help" {
			p.usage(stdout)
			return nil
		}
		c, ok := p.lookup(name)
		if !ok {
			p.usage(stderr)
			return fmt.Errorf("unknown command %q (see the list above)", name)
		}
		return c.Run(ctx, args[1:], stdout, stderr)
	}
	if p.Panel == nil {
		p.usage(stderr)
		return errors.New("this binary was built headless (no panel); use a subcommand")
	}
	return p.Panel(ctx, args)
}

// lookup finds a command by name (the last one listed wins).
func (p Program) lookup(name string) (Command, bool) {
	for i := len(p.Commands) - 1; i >= 0; i-- {
		if p.Commands[i].Name == name {
			return p.Commands[i], true
		}
	}
	return Command{}, false
}

func (p Program) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: rigscope [--model PATH] [--draft PATH]   open the panel")
	fmt.Fprintln(w, "       rigscope COMMAND [flags]                  run headless")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(p.Commands))
	seen := map[string]bool{}
	for _, c := range p.Commands {
		if !seen[c.Name] {
			seen[c.Name] = true
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		c, _ := p.lookup(n)
		fmt.Fprintf(w, "  %-18s %s\n", n, c.Summary)
	}
	fmt.Fprintln(w, "\n`rigscope COMMAND -h` shows a command's flags.")
}

// GPUsFlag adds --gpus to fs: the GPUs a device target's tensor-parallel
// ranks run on, as ordinals ("0,2,4,6": rank i on the i-th; one ordinal:
// every rank on it). The device checks the list against the GPUs it sees.
func GPUsFlag(fs *flag.FlagSet, dst *[]int) {
	fs.Func("gpus", "with --device cuda: GPU ordinals for the tensor-parallel ranks, one per rank, e.g. 0,2,4,6 (one: all ranks share it; default: rank i on GPU i when at least --tp GPUs are visible, else all on GPU 0)", func(s string) error {
		v, err := ParseGPUs(s)
		*dst = v
		return err
	})
}

// NCCLFlags adds the nccl backend's settings of a run to fs (--nccl-proto,
// --nccl-algo, --nccl-min-channels, --nccl-max-channels,
// --nccl-buffsize); the engine checks them (tp.NCCLSettings.Check) and
// refuses them with another backend.
func NCCLFlags(fs *flag.FlagSet, dst *tp.NCCLSettings) {
	fs.StringVar(&dst.Proto, "nccl-proto", "", "with --allreduce nccl: NCCL_PROTO for the run's communicators: LL, LL128, Simple, a comma list, ^ excludes (default NCCL's choice)")
	fs.StringVar(&dst.Algo, "nccl-algo", "", "with --allreduce nccl: NCCL_ALGO for the run's communicators: Ring, Tree, ..., a comma list, ^ excludes (default NCCL's choice)")
	fs.IntVar(&dst.MinChannels, "nccl-min-channels", 0, "with --allreduce nccl: at least this many channels (NCCL_MIN_NCHANNELS per communicator, 1..64; 0 = NCCL's choice)")
	fs.IntVar(&dst.MaxChannels, "nccl-max-channels", 0, "with --allreduce nccl: at most this many channels (NCCL_MAX_NCHANNELS per communicator, 1..64; 0 = NCCL's choice)")
	fs.Func("nccl-buffsize", "with --allreduce nccl: NCCL_BUFFSIZE, e.g. 4M (a power of two, 64K..1G; NCCL reads it once per process; default NCCL's 4M)", func(s string) error {
		b, err := tp.ParseBytes(s)
		dst.BuffSize = b
		return err
	})
}

// ParseGPUs reads a comma-separated list of GPU ordinals.
func ParseGPUs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 1023 {
			return nil, fmt.Errorf("%q is not a GPU ordinal: give GPU numbers as rigscope gpus lists them, e.g. 0,1", f)
		}
		out = append(out, n)
	}
	return out, nil
}
