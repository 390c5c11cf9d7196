// Command rigscope is a control panel for tensor-parallel speculative
// decoding on multi-GPU rigs. Started plainly it opens the panel; with a
// subcommand it runs headless (see `rigscope help`).
//
// This package only lists the commands: each lives in its own package
// under internal/cli/ (internal/cli's doc says how to add one), the panel
// in internal/panel. A command that needs the cuda build tag is listed in
// cuda.go.
package main

import (
	"os"

	"rigscope/internal/cli"
	"rigscope/internal/cli/allreduce"
	"rigscope/internal/cli/bench"
	"rigscope/internal/cli/benchcpu"
	"rigscope/internal/cli/generate"
	"rigscope/internal/cli/gpus"
	"rigscope/internal/cli/plan"
	"rigscope/internal/cli/serve"
	"rigscope/internal/cli/writegguf"
	"rigscope/internal/panel"
)

// commands are the headless subcommands (`rigscope help` sorts them).
var commands = []cli.Command{
	generate.Command,
	bench.Command,
	benchcpu.Command,
	serve.Command,
	gpus.Command,
	allreduce.Command,
	writegguf.Command,
	plan.Command,
}

func program() cli.Program {
	return cli.Program{Commands: commands, Panel: panel.Open}
}

func main() { os.Exit(program().Main(os.Args[1:])) }
