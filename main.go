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

func main() {
	// SIGINT and SIGTERM cancel ctx: runs stop, exports remove their temp files.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "rigscope:", err)
		}
		os.Exit(1)
	}
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
