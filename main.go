// Command rigscope is a control panel for tensor-parallel speculative
// decoding on multi-GPU rigs. Started plainly it opens the panel; with a
// subcommand it runs headless (see `rigscope help`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

// command is one headless subcommand. Each lives in its own cmd_*.go file and
// registers itself in init.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(c command) { commands[c.name] = c }

// openPanel starts the desktop window; gui.go sets it unless built with the
// headless tag.
var openPanel func(ctx context.Context, args []string) error

// errUsage marks an error whose message already explains the usage.
var errUsage = errors.New("usage")

// interruptGrace is how long a command has to stop after the first
// interrupt before the process exits anyway (a second interrupt exits at
// once).
const interruptGrace = 3 * time.Second

// exitInterrupted is the shell's status for a process ended by SIGINT.
const exitInterrupted = 130

func main() {
	ctx := interruptible()
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(exitStatus(ctx, err, os.Stderr))
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
		os.Exit(exitInterrupted)
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
		return exitInterrupted
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "rigscope: interrupted")
		return exitInterrupted
	case err != nil:
		fmt.Fprintln(stderr, "rigscope:", err)
		return 1
	}
	return 0
}

// parseFlags parses a command's flags and refuses positional arguments:
// no command takes any, and one left over is a mistyped flag or value.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q (flags are --name value; `rigscope %s -h` lists them)", fs.Name(), fs.Arg(0), fs.Name())
	}
	return nil
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name := args[0]
		if name == "help" {
			usage(stdout)
			return nil
		}
		c, ok := commands[name]
		if !ok {
			usage(stderr)
			return fmt.Errorf("unknown command %q (see the list above)", name)
		}
		return c.run(ctx, args[1:], stdout, stderr)
	}
	if openPanel == nil {
		usage(stderr)
		return errors.New("this binary was built headless (no panel); use a subcommand")
	}
	return openPanel(ctx, args)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: rigscope [--model PATH] [--draft PATH]   open the panel")
	fmt.Fprintln(w, "       rigscope COMMAND [flags]                  run headless")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\n`rigscope COMMAND -h` shows a command's flags.")
}
