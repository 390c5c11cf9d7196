package metrics

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCreateRunLogRefusesPlanted: a file or a symlink planted at the run
// log's name is never followed, appended to or truncated.
func TestCreateRunLogRefusesPlanted(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	planted := map[string]func(string) error{
		"symlink":          func(p string) error { return os.Symlink(victim, p) },
		"dangling symlink": func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) },
		"file":             func(p string) error { return os.WriteFile(p, []byte("old"), 0o644) },
	}
	for name, plant := range planted {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		if err := plant(p); err != nil {
			t.Fatal(err)
		}
		if l, err := CreateRunLog(p, "r"); err == nil || !errors.Is(err, os.ErrExist) {
			l.Close()
			t.Errorf("CreateRunLog over a planted %s = %v, want an already-exists error", name, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the symlink's target now holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("a dangling symlink's target was created: %v", err)
	}

	// CreateRunLogIn takes another name when its first choice is planted.
	logs := filepath.Join(dir, "logs")
	os.Mkdir(logs, 0o700)
	os.Symlink(victim, filepath.Join(logs, "run1.jsonl"))
	l, err := CreateRunLogIn(logs, "run1")
	if err != nil {
		t.Fatalf("CreateRunLogIn with its name planted: %v", err)
	}
	defer l.Close()
	if filepath.Base(l.Path()) == "run1.jsonl" || !strings.HasPrefix(filepath.Base(l.Path()), "run1-") {
		t.Errorf("CreateRunLogIn wrote %s, want a fresh run1-*.jsonl", l.Path())
	}
	if err := l.StartModel("m", 1); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the symlink's target now holds %q", b)
	}
}

func TestCreateRunLogInModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "runs")
	l, err := CreateRunLogIn(dir, "r")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700 | os.ModeDir}, {filepath.Dir(dir), 0o700 | os.ModeDir}, {l.Path(), 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&^0o077 != c.want&^0o077 || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, want %v (owner only: run logs hold prompts)", c.path, fi.Mode(), c.want)
		}
	}
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestWriteFileAtomicCancelled: a write cancelled while in progress
// removes its temp file and leaves the old file as it was.
func TestWriteFileAtomicCancelled(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "runs.csv")
	os.WriteFile(p, []byte("old"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	afterTempCreated = func(string) { cancel() }
	defer func() { afterTempCreated = nil }()
	err := WriteFileAtomicCtx(ctx, p, make([]byte, 3*writeChunk))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled WriteFileAtomicCtx = %v, want context.Canceled", err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("a cancelled write left %v", left)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("a cancelled write changed the file to %d bytes", len(b))
	}
}

// TestExportSignalRemovesTemp: a child process exporting with a context
// from signal.NotifyContext (as main does) gets SIGTERM mid-write; it must
// leave no temp file behind.
func TestExportSignalRemovesTemp(t *testing.T) {
	if dir := os.Getenv("RIGSCOPE_EXPORT_CHILD"); dir != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		afterTempCreated = func(string) {
			os.Stdout.WriteString("ready\n")
			<-ctx.Done() // hold the write open until the signal lands
		}
		_, err := Export(ctx, dir, []RunRecord{memRecord()})
		if errors.Is(err, context.Canceled) {
			os.Exit(2)
		}
		os.Exit(3)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExportSignalRemovesTemp$")
	cmd.Env = append(os.Environ(), "RIGSCOPE_EXPORT_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	if left := tempFiles(t, dir); len(left) != 1 {
		t.Errorf("mid-export the folder holds temp files %v, want one", left)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child did not exit within 10 s of SIGTERM")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Errorf("child exit = %v, want status 2 (export cancelled)", err)
	}
	if left := tempFiles(t, dir); len(left) > 0 {
		t.Errorf("after SIGTERM the export left %v", left)
	}
}

// TestExportRemovesStaleTemps: temp files a killed (SIGKILL) export left
// are removed by the next export; a fresh one (an export in progress
// elsewhere) is kept.
func TestExportRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "."+ExportRunsCSVName+".123.tmp")
	fresh := filepath.Join(dir, "."+ExportTraceName+".456.tmp")
	for _, p := range []string{stale, fresh} {
		os.WriteFile(p, []byte("partial"), 0o600)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(stale, old, old)
	if _, err := Export(context.Background(), dir, []RunRecord{memRecord()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temp %s survived the export: %v", stale, err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temp (another export in progress) was removed: %v", err)
	}
}
