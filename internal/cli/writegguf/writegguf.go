// Package writegguf is `rigscope write-gguf`: a synthetic preset (or a GGUF
// file re-encoded) written as GGUF in a chosen type (engine/quant), so that
// rigscope and llama.cpp can be timed on the same bytes.
package writegguf

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"rigscope/engine/quant"
	"rigscope/internal/cli"
)

// Command is `rigscope write-gguf`.
var Command = cli.Command{
	Name:    "write-gguf",
	Summary: "write a synthetic preset (or re-encode a GGUF file) as GGUF in a chosen type",
	Run:     runWriteGGUF,
}

// runWriteGGUF: rigscope write-gguf --model synthetic:llama-8b --type q4_k_m --out FILE.
func runWriteGGUF(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("write-gguf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	names := make([]string, len(quant.FileTypes))
	for i, f := range quant.FileTypes {
		names[i] = string(f)
	}
	model := fs.String("model", "", "synthetic:PRESET[?seed=N&layers=N] or a .gguf file to re-encode")
	typ := fs.String("type", "", "weight type: "+strings.Join(names, ", ")+" (tensor types as llama-quantize chooses them)")
	out := fs.String("out", "", "the GGUF file to write")
	force := fs.Bool("force", false, "overwrite --out if it exists")
	if err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if *model == "" || *typ == "" || *out == "" {
		return fmt.Errorf("write-gguf: --model, --type and --out are required (e.g. --model synthetic:llama-8b --type q4_k_m --out llama-8b.Q4_K_M.gguf)")
	}
	ft, err := quant.ParseFileType(*typ)
	if err != nil {
		return fmt.Errorf("write-gguf: --type: %w", err)
	}
	n, err := quant.WriteFile(*model, ft, *out, *force)
	if err != nil {
		return fmt.Errorf("write-gguf: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s (%s, %d bytes)\n", *out, ft, n)
	return nil
}
