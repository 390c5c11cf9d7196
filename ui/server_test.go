//go:build ci

package ui

import (
	"errors"
	"testing"

	"fyne.io/fyne/v2/test"

	"rigscope/engine"
)

// fakeServer records the switch's calls; failStart makes Start fail.
type fakeServer struct {
	calls     []string
	failStart error
	watch     func(*RunRecord)
}

func (f *fakeServer) Watch(w func(*RunRecord)) { f.watch = w }

func (f *fakeServer) Start(addr string) (string, error) {
	f.calls = append(f.calls, "start "+addr)
	if f.failStart != nil {
		return "", f.failStart
	}
	return "serving at http://" + addr + "/v1", nil
}

func (f *fakeServer) Stop() error {
	f.calls = append(f.calls, "stop")
	return nil
}

// TestServerToggle: the switch starts off; a tap starts the server at the
// entry's address and shows its state, the next tap stops it; a failed
// start moves the switch back and says why.
func TestServerToggle(t *testing.T) {
	test.NewTempApp(t)
	f := &fakeServer{}
	v := NewServerView(f, "")
	test.NewTempWindow(t, v.Root)
	if v.toggle.Checked || v.State() != "off" || v.addr.Text != DefaultServeAddr || len(f.calls) != 0 {
		t.Fatalf("new view: on %v, state %q, address %q, calls %q; want off at %s, no calls", v.toggle.Checked, v.State(), v.addr.Text, f.calls, DefaultServeAddr)
	}
	v.addr.SetText("127.0.0.1:9099")
	test.Tap(v.toggle)
	if !v.toggle.Checked || v.State() != "serving at http://127.0.0.1:9099/v1" || !v.addr.Disabled() {
		t.Errorf("switched on: on %v, state %q, address disabled %v", v.toggle.Checked, v.State(), v.addr.Disabled())
	}
	test.Tap(v.toggle)
	if v.toggle.Checked || v.State() != "off" || v.addr.Disabled() {
		t.Errorf("switched off: on %v, state %q, address disabled %v", v.toggle.Checked, v.State(), v.addr.Disabled())
	}
	f.failStart = errors.New("the API server at 127.0.0.1:9099: address already in use")
	test.Tap(v.toggle)
	if v.toggle.Checked || v.State() != "off: the API server at 127.0.0.1:9099: address already in use" {
		t.Errorf("failed start: on %v, state %q; want off with the reason", v.toggle.Checked, v.State())
	}
	want := []string{"start 127.0.0.1:9099", "stop", "start 127.0.0.1:9099"}
	if len(f.calls) != len(want) {
		t.Fatalf("calls %q, want %q", f.calls, want)
	}
	for i := range want {
		if f.calls[i] != want[i] {
			t.Errorf("call %d = %q, want %q", i, f.calls[i], want[i])
		}
	}
}

// TestPanelServer: the panel shows the Server section when given a server,
// switched on at launch by ServeAddr, and none without one; the runs the
// server reports join the runs table, numbered after the panel's own and
// marked as the API's.
func TestPanelServer(t *testing.T) {
	f := &fakeServer{}
	p, q, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 0), Options{Server: f, ServeAddr: ":8123"})
	if p.Server == nil || !p.Server.toggle.Checked || p.Server.State() != "serving at http://:8123/v1" {
		t.Fatalf("with ServeAddr: section %v, state %q", p.Server != nil, p.Server.State())
	}
	p.Send("hi")
	q.until(t, "the panel's run to end", func() bool { return len(p.Runs.Runs()) == 1 })
	go f.watch(&RunRecord{Model: "fake", Source: SourceAPI, Stats: engine.Stats{GeneratedTokens: 3, StopReason: "stop"}})
	q.until(t, "the API run to be listed", func() bool { return len(p.Runs.Runs()) == 2 })
	r := p.Runs.Runs()[1]
	source := runFields[fieldIndex("source")]
	if r.ID != 2 || p.Runs.Cell(1, 0) != "2" || source.text(r) != "api" || source.text(p.Runs.Runs()[0]) != "panel" {
		t.Errorf("the API run is listed as #%d (cell %q), started by %q (the panel's: %q); want #2 by api after the panel's",
			r.ID, p.Runs.Cell(1, 0), source.text(r), source.text(p.Runs.Runs()[0]))
	}
	q2, _, _ := newTestPanel(t, NewFakeEngine(ModelInfo{Name: "fake"}, 0), Options{})
	if q2.Server != nil {
		t.Error("a panel without a server shows a Server section")
	}
}
