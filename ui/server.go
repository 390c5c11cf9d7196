package ui

import (
	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"
)

// DefaultServeAddr is the address the Server switch offers first.
const DefaultServeAddr = "127.0.0.1:8080"

// APIServer is the OpenAI API server the panel's Server switch runs (the
// main package wires internal/openai's, on the panel's engine).
type APIServer interface {
	// Start serves at addr (HOST:PORT) and returns the state to show.
	Start(addr string) (string, error)
	// Stop stops serving.
	Stop() error
	// Watch sets where the server reports each run it made, once it ends
	// (called on the run's goroutine).
	Watch(func(*RunRecord))
}

// ServerView is the panel's Server section: an address and an on/off
// switch, off until switched on, and a line that says what it is doing.
type ServerView struct {
	Root   fyne.CanvasObject
	addr   *widget.Entry
	toggle *widget.Check
	state  *widget.Label
	srv    APIServer
	quiet  bool // set while the switch is moved back after a failure
}

// NewServerView shows srv's controls with addr in the entry ("" offers
// DefaultServeAddr); the switch starts off.
func NewServerView(srv APIServer, addr string) *ServerView {
	v := &ServerView{srv: srv}
	if addr == "" {
		addr = DefaultServeAddr
	}
	v.addr = widget.NewEntry()
	v.addr.SetText(addr)
	v.state = widget.NewLabel("off")
	v.state.Wrapping = fyne.TextWrapWord
	v.toggle = widget.NewCheck("Serve the OpenAI API", v.switched)
	v.Root = container.NewVBox(heading("Server"),
		widget.NewForm(widget.NewFormItem("address", v.addr)), v.toggle, v.state)
	return v
}

// SetOn moves the switch (as a click does).
func (v *ServerView) SetOn(on bool) { v.toggle.SetChecked(on) }

// State is the line under the switch.
func (v *ServerView) State() string { return v.state.Text }

func (v *ServerView) switched(on bool) {
	if v.quiet {
		return
	}
	v.state.Importance = widget.MediumImportance
	if !on {
		v.addr.Enable()
		if err := v.srv.Stop(); err != nil {
			v.fail(err)
			return
		}
		v.state.SetText("off")
		return
	}
	msg, err := v.srv.Start(v.addr.Text)
	if err != nil {
		v.quiet = true
		v.toggle.SetChecked(false)
		v.quiet = false
		v.fail(err)
		return
	}
	v.addr.Disable() // the address is fixed while serving
	v.state.SetText(msg)
}

func (v *ServerView) fail(err error) {
	v.state.Importance = widget.DangerImportance
	v.state.SetText("off: " + err.Error())
}
