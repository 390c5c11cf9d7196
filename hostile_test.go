package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rigscope/internal/cli"
	"rigscope/internal/fixtures"
	"rigscope/internal/panel"
	"rigscope/internal/sysmem"
)

// hostileChild makes the test binary run main() instead of the tests, so
// each hostile case runs in a process of its own (for its exit status, its
// peak memory and a hang that a timeout can end) without a second build.
const hostileChild = "RIGSCOPE_HOSTILE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(hostileChild) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Limits every hostile case is held to.
const (
	hostileTimeout = 10 * time.Second
	hostileMaxRSS  = 1536 << 20 // bytes
)

// hostileCase is one bad input to the command line. want is a substring of
// the one message that must name the problem. The exit status wanted is 1
// (refused), 130 with interrupt, and 0 with runs (an input that must be
// repaired with one warning, or that must work).
type hostileCase struct {
	name  string
	args  func(d *hostileDir) []string
	want  string
	runs  bool
	check func(t *testing.T, d *hostileDir) // more assertions after the run
	// interrupt sends SIGINT once the command has printed its first output.
	interrupt bool
	// panel: the case runs the panel's flag parsing (not in a headless build).
	panel bool
	// arch: a file-level value refused by the loaders (engine/loader,
	// engine/hfconfig, engine/model/config.go, the "arch" work merged into
	// main); the summary counts these apart. It is never skipped.
	arch bool
}

func TestHostileInputs(t *testing.T) {
	models := filepath.Dir(fixtures.Path(t, "gocoder-14m-hf"))
	const hf, l2c = "gocoder-14m-hf", "gocoder-draft-1m.llama2c.bin"
	gen := func(model string, extra ...string) func(d *hostileDir) []string {
		return func(d *hostileDir) []string {
			m := model
			if !strings.HasPrefix(m, "synthetic:") {
				m = d.model(m)
			}
			return append([]string{"generate", "--model", m, "--max-tokens", "3"}, extra...)
		}
	}
	ids := func(extra ...string) func(d *hostileDir) []string {
		return gen(hf, append([]string{"--prompt-ids", "1,2,3"}, extra...)...)
	}
	withModel := func(prompt []string, model func(d *hostileDir) string, extra ...string) func(d *hostileDir) []string {
		return func(d *hostileDir) []string {
			return append(append([]string{"generate", "--model", model(d), "--max-tokens", "3"}, prompt...), extra...)
		}
	}
	pIDs, pText := []string{"--prompt-ids", "1,2,3"}, []string{"--prompt", "func main"}
	longIDs := strings.TrimSuffix(strings.Repeat("5,", 100), ",")
	bigLayers, bigSkip := memoryHogLayers()

	cases := []hostileCase{
		// Sizes from flags, checked before anything is allocated.
		{name: "ctx max int64", args: ids("--ctx", "9223372036854775807"), want: "context 9223372036854775807 is beyond the 2048 positions"},
		{name: "ctx 1e9", args: ids("--ctx", "1000000000"), want: "context 1000000000 is beyond the 2048"},
		{name: "ctx 1e6", args: ids("--ctx", "1000000"), want: "context 1000000 is beyond the 2048"},
		{name: "ctx trained+1", args: ids("--ctx", "2049"), want: "give --ctx 2048 or less"},
		{name: "ctx -1", args: ids("--ctx", "-1"), want: "--ctx -1 is negative"},
		{name: "ctx not a number", args: ids("--ctx", "lots"), want: `invalid value "lots" for flag -ctx`},
		{name: "ctx overflow", args: ids("--ctx", "99999999999999999999"), want: "invalid value"},
		{name: "tp 2^31", args: ids("--tp", "2147483648"), want: "TP 2147483648 is more than this machine can run"},
		{name: "tp max int64", args: ids("--tp", "9223372036854775807"), want: "is more than this machine can run"},
		{name: "tp -1", args: ids("--tp", "-1"), want: "--tp -1 must be at least 1"},
		{name: "tp 0", args: ids("--tp", "0"), want: "--tp 0 must be at least 1"},
		{name: "tp not dividing heads", args: ids("--tp", "3"), want: "does not divide 8 heads / 4 kv heads"},
		{name: "k -1", args: ids("--k", "-1", "--drafter", "ngram"), want: "--k -1 must be at least 1"},
		{name: "k 0", args: ids("--k", "0", "--drafter", "ngram"), want: "--k 0 must be at least 1"},
		{name: "k 17", args: ids("--k", "17", "--drafter", "ngram"), want: "k=17 outside 1..16"},
		{name: "k 2^31", args: ids("--k", "2147483648", "--drafter", "ngram"), want: "k=2147483648 outside 1..16"},
		{name: "tree -1", args: ids("--tree", "-1"), want: "tree branching -1 outside"},
		{name: "tree 9", args: ids("--tree", "9", "--drafter", "ngram"), want: "tree branching 9 outside"},
		{name: "tree 2^31", args: ids("--tree", "2147483648", "--drafter", "ngram"), want: "tree branching 2147483648 outside"},
		{name: "max-tokens -1", args: ids("--max-tokens", "-1"), want: "--max-tokens -1 must be at least 1"},
		{name: "max-tokens 0", args: ids("--max-tokens", "0"), want: "--max-tokens 0 must be at least 1"},
		{name: "top-k -1", args: ids("--top-k", "-1"), want: "top-k -1 is negative"},
		{name: "ngram-min 0", args: ids("--drafter", "ngram", "--ngram-min", "0"), want: "an n-gram has at least 1 token"},
		{name: "ngram-min -1", args: ids("--drafter", "ngram", "--ngram-min", "-1"), want: "an n-gram has at least 1 token"},
		{name: "ngram-max 1e6", args: ids("--drafter", "ngram", "--ngram-max", "1000000"), want: "maximum n-gram size 1000000 is above 64"},
		{name: "ngram min > max", args: ids("--drafter", "ngram", "--ngram-min", "5", "--ngram-max", "2"), want: "maximum n-gram size 2 is below the minimum 5"},
		{name: "prompt id = vocab", args: gen(hf, "--prompt-ids", "1,4096"), want: "prompt token id 4096 (position 1) is outside the model's vocabulary of 4096"},
		{name: "prompt id -1", args: gen(hf, "--prompt-ids", "-1"), want: `token id "-1" is not an integer in 0..2147483647`},
		{name: "prompt id > int32", args: gen(hf, "--prompt-ids", "99999999999"), want: `token id "99999999999" is not an integer`},
		{name: "prompt id junk", args: gen(hf, "--prompt-ids", "1,2x"), want: `token id "2x" is not an integer`},
		{name: "prompt ids empty", args: gen(hf, "--prompt-ids", ", ,"), want: "no token ids given"},
		{name: "prompt and ids", args: gen(hf, "--prompt-ids", "1", "--prompt", "x"), want: "give --prompt or --prompt-ids, not both"},
		{name: "no prompt", args: gen(hf), want: "give a prompt"},
		{name: "prompt longer than ctx", args: gen(hf, "--prompt-ids", longIDs, "--ctx", "64"), want: "prompt of 100 tokens does not fit the context of 64"},
		{name: "tree does not fit ctx", args: ids("--drafter", "ngram", "--tree", "8", "--k", "16", "--ctx", "64"), want: "the context holds 64"},
		{name: "memory: weights + KV beyond RAM", args: gen(fmt.Sprintf("synthetic:llama-8b?layers=%d", bigLayers), "--prompt-ids", "1"), want: "available (MemAvailable)"},

		{name: "allreduce-bench beyond RAM", args: cmdArgs("allreduce-bench", "--ranks", "64", "--sizes", "4G"), want: "available (MemAvailable); lower --ranks or --sizes"},
		{name: "allreduce-bench ranks 0", args: cmdArgs("allreduce-bench", "--ranks", "0"), want: `"0" is not a group size`},
		{name: "allreduce-bench ranks 2^31", args: cmdArgs("allreduce-bench", "--ranks", "2147483648"), want: "is not a group size"},
		{name: "allreduce-bench size 5G", args: cmdArgs("allreduce-bench", "--sizes", "5G"), want: "up to 4G"},
		{name: "allreduce-bench size not float32s", args: cmdArgs("allreduce-bench", "--sizes", "3"), want: "not a whole number of float32s"},
		{name: "allreduce-bench iters -1", args: cmdArgs("allreduce-bench", "--iters", "-1"), want: "--iters -1: must be at least 1"},
		{name: "allreduce-bench extra argument", args: cmdArgs("allreduce-bench", "now"), want: `unexpected argument "now"`},
		{name: "allreduce-bench nccl protocol on the CPU", args: cmdArgs("allreduce-bench", "--nccl-protos", "LL"), want: "add --device cuda"},
		{name: "allreduce-bench unknown nccl protocol", args: cmdArgs("allreduce-bench", "--device", "cuda", "--nccl-protos", "LL256"), want: `"LL256" is not one NCCL knows`},

		{name: "bench max-tokens max int64", args: cmdArgs("bench", "--model", "synthetic:tiny", "--max-tokens", "9223372036854775807"), want: "--max-tokens 9223372036854775807 must be 1..16777216"},
		{name: "bench max-tokens beyond the context", args: cmdArgs("bench", "--model", "synthetic:tiny", "--max-tokens", "1000000"), want: "beyond the 32768 positions"},
		{name: "bench max-tokens 0", args: cmdArgs("bench", "--model", "synthetic:tiny", "--max-tokens", "0"), want: "--max-tokens 0 must be 1.."},
		{name: "bench k 0", args: cmdArgs("bench", "--model", "synthetic:tiny", "--k", "0"), want: "--k 0 must be at least 1"},
		{name: "bench k 99", args: cmdArgs("bench", "--model", "synthetic:tiny", "--k", "99"), want: "k=99 outside 1..16"},
		{name: "bench tree -1", args: cmdArgs("bench", "--model", "synthetic:tiny", "--tree", "-1"), want: "--tree"},
		{name: "bench tp 2^31", args: cmdArgs("bench", "--model", "synthetic:tiny", "--tp", "2147483648"), want: "is more than this machine can run"},
		{name: "bench prompts -1", args: cmdArgs("bench", "--model", "synthetic:tiny", "--prompts", "-1"), want: "--prompts -1"},

		// Floats from flags.
		{name: "temperature NaN", args: ids("--temperature", "NaN"), want: "temperature is NaN"},
		{name: "temperature Inf", args: ids("--temperature", "Inf"), want: "temperature is +Inf"},
		{name: "temperature -Inf", args: ids("--temperature", "-Inf"), want: "temperature is -Inf"},
		{name: "temperature 1e400", args: ids("--temperature", "1e400"), want: "temperature is +Inf"},
		{name: "temperature denormal 1e-45", args: ids("--temperature", "1e-45"), want: "temperature 1e-45 is below the smallest that samples"},
		{name: "temperature 1e-50", args: ids("--temperature", "1e-50"), want: "1e-50 is too close to 0 for a float32"},
		{name: "temperature -1", args: ids("--temperature", "-1"), want: "temperature -1 is outside [0, 100]"},
		{name: "temperature 101", args: ids("--temperature", "101"), want: "temperature 101 is outside [0, 100]"},
		{name: "temperature text", args: ids("--temperature", "warm"), want: `"warm" is not a number`},
		{name: "top-p NaN", args: ids("--top-p", "NaN"), want: "top-p is NaN"},
		{name: "top-p 1.5", args: ids("--top-p", "1.5"), want: "top-p 1.5 is outside [0, 1]"},
		{name: "top-p -0.1", args: ids("--top-p", "-0.1"), want: "top-p -0.1 is outside [0, 1]"},
		{name: "seed -1", args: ids("--seed", "-1"), want: `invalid value "-1" for flag -seed`},

		// Paths: regular files only, never blocking.
		{name: "model FIFO", args: withModel(pIDs, func(d *hostileDir) string { return d.fifo("m.gguf") }), want: "is a FIFO"},
		{name: "model /dev/zero", args: withModel(pIDs, func(*hostileDir) string { return "/dev/zero" }), want: "/dev/zero is a character device"},
		{name: "model link to /dev/zero", args: withModel(pIDs, func(d *hostileDir) string { return d.link("m.gguf", "/dev/zero") }), want: "is a character device"},
		{name: "model /proc entry", args: withModel(pIDs, func(*hostileDir) string { return "/proc/self/environ" }), want: "kernel pseudo-file"},
		{name: "model /proc folder", args: withModel(pIDs, func(*hostileDir) string { return "/proc/self" }), want: "kernel pseudo-file folder"},
		{name: "model missing", args: withModel(pIDs, func(d *hostileDir) string { return d.path("nope.gguf") }), want: "no such file or directory"},
		{name: "model empty folder", args: withModel(pIDs, func(d *hostileDir) string { os.Mkdir(d.path("e"), 0o700); return d.path("e") }), want: "without config.json"},
		{name: "model text file", args: withModel(pIDs, func(d *hostileDir) string { return d.write("notes.txt", []byte("hello, not a model at all")) }), want: "unknown model format"},
		{name: "model truncated GGUF", args: withModel(pIDs, func(d *hostileDir) string {
			return d.gguf(func(b []byte) []byte { return b[:4096] })
		}), want: "m.gguf"},
		{name: "hf config.json FIFO", args: withModel(pIDs, func(d *hostileDir) string { return d.hf(map[string][]byte{"config.json": nil}) }), want: "config.json is a FIFO"},
		{name: "hf tokenizer.json FIFO", args: withModel(pIDs, func(d *hostileDir) string { return d.hf(map[string][]byte{"tokenizer.json": nil}) }), want: "tokenizer.json is a FIFO"},
		{name: "hf tokenizer.json -> /dev/zero", args: withModel(pIDs, func(d *hostileDir) string { return d.hf(map[string][]byte{"tokenizer.json": []byte("->/dev/zero")}) }), want: "tokenizer.json is a character device"},
		{name: "hf safetensors FIFO", args: withModel(pIDs, func(d *hostileDir) string { return d.hf(map[string][]byte{"model.safetensors": nil}) }), want: "model.safetensors is a FIFO"},
		{name: "hf tokenizer.json 300 MB", args: withModel(pIDs, func(d *hostileDir) string {
			dir := d.hf(map[string][]byte{"tokenizer.json": []byte("{}")})
			if err := os.Truncate(filepath.Join(dir, "tokenizer.json"), 300<<20); err != nil { // sparse
				d.t.Fatal(err)
			}
			return dir
		}), want: "tokenizer.json is 314572800 bytes, more than the 268435456"},
		{name: "tokenizer FIFO", args: func(d *hostileDir) []string {
			return []string{"generate", "--model", d.model(l2c), "--prompt", "x", "--tokenizer", d.fifo("tok.bin")}
		}, want: "tok.bin is a FIFO"},
		{name: "tokenizer /dev/zero", args: func(d *hostileDir) []string {
			return []string{"generate", "--model", d.model(l2c), "--prompt", "x", "--tokenizer", "/dev/zero"}
		}, want: "--tokenizer /dev/zero is a character device"},
		{name: "tokenizer link to /dev/zero", args: func(d *hostileDir) []string {
			return []string{"generate", "--model", d.model(l2c), "--prompt", "x", "--tokenizer", d.link("tok.bin", "/dev/zero")}
		}, want: "is a character device"},
		{name: "tokenizer 300 MB", args: func(d *hostileDir) []string {
			p := d.write("tok.bin", nil)
			os.Truncate(p, 300<<20)
			return []string{"generate", "--model", d.model(l2c), "--prompt", "x", "--tokenizer", p}
		}, want: "more than the 268435456"},
		{name: "tokenizer missing", args: func(d *hostileDir) []string {
			return []string{"generate", "--model", d.model(l2c), "--prompt", "x", "--tokenizer", d.path("none.bin")}
		}, want: "no such file"},
		{name: "draft FIFO", args: func(d *hostileDir) []string { return ids("--draft", d.fifo("d.gguf"))(d) }, want: "is a FIFO"},
		{name: "draft link to /dev/zero", args: func(d *hostileDir) []string { return ids("--draft", d.link("d.gguf", "/dev/zero"))(d) }, want: "is a character device"},
		{name: "draft folder with FIFO config", args: func(d *hostileDir) []string {
			return ids("--drafter", "eagle3", "--draft", d.hf(map[string][]byte{"config.json": nil}))(d)
		}, want: "config.json is a FIFO"},

		// Tokenizers that are not the model's.
		{name: "tokenizer of 100 tokens for 4096", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"tokenizer.json": tokenizerJSON(100, []string{"t 0"})})
		}), want: "the tokenizer has 100 tokens, the model 4096"},
		{name: "tokenizer of 5000 tokens for 4096", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"tokenizer.json": tokenizerJSON(5000, []string{"t 0"})})
		}), want: "the tokenizer has 5000 tokens, the model only 4096"},
		{name: "tokenizer BPE without merges", args: withModel(pText, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"tokenizer.json": tokenizerJSON(4096, nil)})
		}), want: "a BPE model without merges"},
		{name: "tokenizer with no vocabulary", args: withModel(pText, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"tokenizer.json": []byte(`{"model":{"type":"BPE","vocab":{},"merges":[]}}`)})
		}), want: "empty vocabulary"},
		{name: "tokenizer not JSON", args: withModel(pText, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"tokenizer.json": []byte(`{"model":`)})
		}), want: "tokenizer.json"},
		{name: "draft vocabulary differs", args: ids("--draft", "synthetic:small"), want: "vocabulary differs from the target's at token id 3"},

		// Flags and drafters.
		{name: "extra positional argument", args: ids("extra"), want: `unexpected argument "extra"`},
		{name: "two extra arguments", args: ids("a", "b"), want: `unexpected argument "a"`},
		{name: "panel --ctx -1", panel: true, args: cmdArgs("--ctx", "-1"), want: "--ctx -1 is negative"},
		{name: "panel --tp -2", panel: true, args: cmdArgs("--tp", "-2"), want: "--tp -2 is negative"},
		{name: "panel --window-size bad", panel: true, args: cmdArgs("--window-size", "1280"), want: `--window-size "1280": want WIDTHxHEIGHT`},
		{name: "panel --window-size huge", panel: true, args: cmdArgs("--window-size", "100000x800"), want: "320x240 to 8192x8192"},
		{name: "panel extra argument", panel: true, args: cmdArgs("--model", "synthetic:tiny", "more"), want: `unexpected argument "more"`},
		{name: "panel replay of a missing log", panel: true, args: cmdArgs("--replay", "/nonexistent/run.jsonl"), want: "--replay: "},
		{name: "unknown command", args: func(*hostileDir) []string { return []string{"generat"} }, want: `unknown command "generat"`},
		{name: "unknown drafter", args: ids("--drafter", "medusa"), want: `unknown kind "medusa"`},
		{name: "ngram with a draft path", args: func(d *hostileDir) []string { return ids("--drafter", "ngram", "--draft", d.model(hf))(d) }, want: "not ngram"},
		{name: "eagle3 with a non-head folder", args: func(d *hostileDir) []string { return ids("--drafter", "eagle3", "--draft", d.model(hf))(d) }, want: "eagle3"},
		{name: "model drafter without a path", args: ids("--drafter", "model"), want: "needs a draft model file"},
		{name: "unknown device", args: ids("--device", "tpu"), want: `device "tpu" is not in this build`},
		{name: "unknown allreduce", args: ids("--allreduce", "carrier-pigeon"), want: "carrier-pigeon"},
		{name: "nccl on the CPU", args: ids("--allreduce", "nccl", "--tp", "2"), want: "NCCL needs GPU ranks"},
		{name: "nccl protocol unknown", args: ids("--nccl-proto", "LL256"), want: `NCCL_PROTO "LL256": "LL256" is not one NCCL knows`},
		{name: "nccl settings with ring", args: ids("--tp", "2", "--allreduce", "ring", "--nccl-algo", "Tree"), want: "apply to the nccl allreduce backend; this run uses ring"},
		{name: "nccl buffer size not a power of two", args: ids("--nccl-buffsize", "3M"), want: "must be a power of two"},
		{name: "nccl buffer size not bytes", args: ids("--nccl-buffsize", "lots"), want: `"lots": not a byte count`},
		{name: "nccl channels inverted", args: ids("--nccl-min-channels", "9", "--nccl-max-channels", "2"), want: "minimum channels 9 above maximum channels 2"},
		{name: "nccl channels 65", args: ids("--nccl-max-channels", "65"), want: "must be 1..64"},
		{name: "nccl NVLS", args: ids("--nccl-algo", "NVLS"), want: "NCCL_NVLS_ENABLE=0"},
		{name: "gpus on the CPU", args: ids("--gpus", "0,1", "--tp", "2"), want: "add --device cuda"},
		{name: "gpus not numbers", args: ids("--gpus", "0,x"), want: `"x" is not a GPU ordinal`},
		{name: "gpus negative", args: ids("--gpus", "-1"), want: `"-1" is not a GPU ordinal`},
		{name: "eagle3 --draft HEAD works", args: func(d *hostileDir) []string {
			return ids("--drafter", "eagle3", "--draft", d.model("gocoder-14m-eagle3"))(d)
		}, runs: true, want: "drafter eagle3"},

		// Listener flags (command level only; the listener is helper prom's).
		{name: "metrics-addr port 99999", args: ids("--metrics-addr", ":99999"), want: "--metrics-addr :99999"},
		{name: "metrics-addr negative port", args: ids("--metrics-addr", "localhost:-1"), want: "--metrics-addr localhost:-1"},

		// Interrupts: the run stops and the status says so.
		{name: "SIGINT during a run", args: gen(hf, "--prompt-ids", "1,2,3", "--max-tokens", "100000", "--temperature", "1"), interrupt: true, want: "interrupted"},
		{name: "SIGINT during a speculative run", args: gen(hf, "--prompt-ids", "1,2,3", "--max-tokens", "100000", "--drafter", "ngram", "--temperature", "1"), interrupt: true, want: "interrupted"},

		// Calibration caches: repaired with a warning naming the file, never fatal.
		{name: "cache bogus backend", args: cacheRun(func(r []map[string]any, _ map[string]any) { r[0]["backend"] = "warp" }), runs: true, want: `names backend "warp"`, check: cacheRepaired},
		{name: "cache auto", args: cacheRun(func(r []map[string]any, _ map[string]any) { r[1]["backend"] = "auto" }), runs: true, want: `names backend "auto"`, check: cacheRepaired},
		{name: "cache compressed", args: cacheRun(func(r []map[string]any, _ map[string]any) { r[0]["backend"] = "compressed" }), runs: true, want: `names backend "compressed"`, check: cacheRepaired},
		{name: "cache nccl", args: cacheRun(func(r []map[string]any, _ map[string]any) { r[0]["backend"] = "nccl" }), runs: true, want: `names backend "nccl"`, check: cacheRepaired},
		{name: "cache ranks mismatch", args: cacheRun(func(_ []map[string]any, tb map[string]any) { tb["ranks"] = 4 }), runs: true, want: "says 4 ranks", check: cacheRepaired},
		{name: "cache sizes out of order", args: cacheRun(func(r []map[string]any, _ map[string]any) { r[1]["max_bytes"] = 16 }), runs: true, want: "sizes must increase", check: cacheRepaired},
		{name: "cache corrupt", args: func(d *hostileDir) []string {
			d.write(filepath.Base(d.cachePath()), []byte(`{"tables": {`))
			return tpRun(d)
		}, runs: true, want: "is corrupt", check: cacheRepaired},
		{name: "cache FIFO", args: func(d *hostileDir) []string { d.fifo(filepath.Base(d.cachePath())); return tpRun(d) }, runs: true, want: "is a FIFO", check: cacheRepaired},
		{name: "cache link to /dev/zero", args: func(d *hostileDir) []string { d.link(filepath.Base(d.cachePath()), "/dev/zero"); return tpRun(d) }, runs: true, want: "is a character device", check: cacheRepaired},

		// File-level values (refused by the loaders: the "arch" work).
		{arch: true, name: "gguf rope freq_base NaN", args: withModel(pIDs, func(d *hostileDir) string {
			return d.gguf(ggufFloatKV(d.t, "llama.rope.freq_base", float32(math.NaN())))
		}), want: "freq_base"},
		{arch: true, name: "gguf rms epsilon Inf", args: withModel(pIDs, func(d *hostileDir) string {
			return d.gguf(ggufFloatKV(d.t, "llama.attention.layer_norm_rms_epsilon", float32(math.Inf(1))))
		}), want: "layer_norm_rms_epsilon"},
		{arch: true, name: "gguf Q8_0 tensor relabelled F32", args: withModel(pIDs, func(d *hostileDir) string {
			return d.gguf(ggufRelabelF32(d.t))
		}), want: "F32"},
		{arch: true, name: "config rms_norm_eps 1e39", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["rms_norm_eps"] = 1e39 })})
		}), want: "rms_norm_eps"},
		{arch: true, name: "config rms_norm_eps < 0", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["rms_norm_eps"] = -1e-5 })})
		}), want: "rms_norm_eps"},
		{arch: true, name: "config rope_theta 0", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) {
				c["rope_parameters"] = map[string]any{"rope_theta": 0, "rope_type": "default"}
			})})
		}), want: "rope_theta"},
		{arch: true, name: "config context 0", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["max_position_embeddings"] = 0 })})
		}), want: "max_position_embeddings"},
		{name: "config kv heads not dividing heads", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["num_key_value_heads"] = 3 })})
		}), want: "not divisible by 3"},
		{name: "config hidden size not matching the tensors", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["hidden_size"] = 500 })})
		}), want: "500"},
		{name: "config vocab 2^31", args: withModel(pIDs, func(d *hostileDir) string {
			return d.hf(map[string][]byte{"config.json": d.config(func(c map[string]any) { c["vocab_size"] = 1 << 31 })})
		}), want: "vocab"},
	}

	var mu sync.Mutex
	var failed, arch, skipped []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if t.Skipped() {
					mu.Lock()
					skipped = append(skipped, tc.name)
					mu.Unlock()
				}
			}()
			if tc.name == "memory: weights + KV beyond RAM" && bigSkip != "" {
				t.Skip(bigSkip)
			}
			if avail, err := sysmem.Available(); tc.name == "allreduce-bench beyond RAM" && (err != nil || avail > 776<<30) {
				t.Skip("the sweep fits this machine's memory, or it does not say")
			}
			if tc.panel && panel.Open == nil {
				t.Skip("a headless build has no panel")
			}
			d := &hostileDir{t: t, dir: t.TempDir(), models: models}
			ok := runHostile(t, d, tc)
			if !ok {
				mu.Lock()
				failed = append(failed, tc.name)
				if tc.arch {
					arch = append(arch, tc.name)
				}
				mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		t.Logf("hostile inputs: %d cases, %d passed, %d skipped %q, %d failed (of which %d are file-level values for the loaders): %q",
			len(cases), len(cases)-len(failed)-len(skipped), len(skipped), skipped, len(failed), len(arch), failed)
	})
}

// runHostile runs one case in a child process and checks it: the exit
// status, one message naming the problem, no panic, within the time limit
// and the memory bound.
func runHostile(t *testing.T, d *hostileDir, tc hostileCase) bool {
	t.Helper()
	args := tc.args(d)
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), hostileChild+"=1", "RIGSCOPE_CACHE_DIR="+d.dir, "GORACE=halt_on_error=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if tc.interrupt {
		first := make([]byte, 1)
		if _, err := io.ReadFull(stdout, first); err == nil {
			out.Write(first)
			cmd.Process.Signal(os.Interrupt)
		}
	}
	io.Copy(&out, stdout)
	err = cmd.Wait()
	msg := stderr.String()
	ok := true
	fail := func(format string, a ...any) {
		t.Helper()
		ok = false
		t.Errorf("rigscope %s\n  "+format+"\n  stderr: %s", append([]any{strings.Join(args, " ")}, append(a, strings.TrimSpace(msg))...)...)
	}
	if ctx.Err() != nil {
		fail("still running after %v (hang?)", hostileTimeout)
		return false
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	want := 1
	switch {
	case tc.interrupt:
		want = cli.ExitInterrupted
	case tc.runs:
		want = 0
	}
	if code != want {
		fail("exit status %d, want %d", code, want)
	}
	if !strings.Contains(msg, tc.want) && !strings.Contains(out.String(), tc.want) {
		fail("no message with %q", tc.want)
	}
	if strings.Contains(msg, "panic:") || strings.Contains(msg, "goroutine ") {
		fail("panicked")
	}
	if want != 0 {
		if n := strings.Count(msg, "rigscope:"); n != 1 {
			fail("%d messages, want one", n)
		}
	} else if tc.check != nil && strings.Count(msg, "rigscope: warning:") != 1 {
		fail("want one warning naming the file %s", d.cachePath())
	} else if tc.check != nil && !strings.Contains(msg, d.cachePath()) {
		fail("the warning does not name %s", d.cachePath())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss*1024 > hostileMaxRSS {
		fail("peak memory %s, over %s", sysmem.GiB(ru.Maxrss*1024), sysmem.GiB(hostileMaxRSS))
	}
	if tc.check != nil {
		tc.check(t, d)
	}
	return ok
}
