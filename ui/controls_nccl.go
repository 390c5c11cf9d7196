package ui

import (
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine/tp"
)

// ncclChoice is the protocol and algorithm choices' "leave it to NCCL".
const ncclChoice = "NCCL's choice"

// ncclControls are the nccl backend's settings in the run controls:
// protocol, algorithm, minimum and maximum channels and buffer size. They
// are enabled only while nccl is the chosen backend and can run here;
// otherwise the label under them says why they are disabled. A change
// makes the next nccl run create its communicators again (the engine and
// the device decide; the weights stay).
type ncclControls struct {
	box          *fyne.Container
	proto, algo  *widget.Select
	minCh, maxCh *widget.Entry
	buff         *widget.Entry
	why          *widget.Label
	// offered and reason: whether this device has an nccl backend, and
	// why it cannot run here ("" when it can).
	offered bool
	reason  string
}

// newNCCLControls shows s; backends tells whether nccl is offered and
// available; edit applies a change to the settings (validated by the
// caller, which shows a refusal).
func newNCCLControls(s tp.NCCLSettings, backends []Choice, edit func(func(*tp.NCCLSettings))) *ncclControls {
	n := &ncclControls{}
	for _, b := range backends {
		if b.Name == "nccl" {
			n.offered, n.reason = true, b.Reason
			if !b.Available && n.reason == "" {
				n.reason = "unavailable here"
			}
		}
	}
	n.proto = ncclSelect(tp.NCCLProtos, s.Proto, func(v string) { edit(func(s *tp.NCCLSettings) { s.Proto = v }) })
	// The NVLS algorithms are left out: rigscope keeps NVLink SHARP off.
	n.algo = ncclSelect(slices.DeleteFunc(slices.Clone(tp.NCCLAlgos), func(a string) bool { return strings.HasPrefix(a, "NVLS") }),
		s.Algo, func(v string) { edit(func(s *tp.NCCLSettings) { s.Algo = v }) })
	n.minCh = ncclIntEntry(s.MinChannels, func(v int) { edit(func(s *tp.NCCLSettings) { s.MinChannels = v }) })
	n.maxCh = ncclIntEntry(s.MaxChannels, func(v int) { edit(func(s *tp.NCCLSettings) { s.MaxChannels = v }) })
	n.buff = widget.NewEntry()
	n.buff.SetPlaceHolder("NCCL's (4M)")
	if s.BuffSize > 0 {
		n.buff.SetText(tp.FormatBytes(s.BuffSize))
	}
	n.buff.OnChanged = func(t string) {
		if b, err := tp.ParseBytes(t); err == nil {
			edit(func(s *tp.NCCLSettings) { s.BuffSize = b })
		}
	}
	n.why = reasonLabel("")
	form := widget.NewForm(
		widget.NewFormItem("protocol", n.proto),
		widget.NewFormItem("algorithm", n.algo),
		widget.NewFormItem("channels", container.NewGridWithColumns(2, n.minCh, n.maxCh)),
		widget.NewFormItem("buffer", n.buff),
	)
	n.box = container.NewVBox(form, n.why)
	return n
}

// ncclSelect offers NCCL's choice and names; a saved value that is a list
// (from the command line's syntax) is offered too, as it is.
func ncclSelect(names []string, selected string, set func(string)) *widget.Select {
	opts := append([]string{ncclChoice}, names...)
	if selected != "" && !slices.Contains(opts, selected) {
		opts = append(opts, selected)
	}
	sel := widget.NewSelect(opts, nil)
	if selected == "" {
		sel.SetSelected(ncclChoice)
	} else {
		sel.SetSelected(selected)
	}
	sel.OnChanged = func(v string) {
		if v == ncclChoice {
			v = ""
		}
		set(v)
	}
	return sel
}

// ncclIntEntry is a channel count: empty or 0 is NCCL's choice.
func ncclIntEntry(v int, set func(int)) *widget.Entry {
	e := widget.NewEntry()
	e.SetPlaceHolder("NCCL's")
	if v > 0 {
		e.SetText(strconv.Itoa(v))
	}
	e.OnChanged = func(t string) {
		if strings.TrimSpace(t) == "" {
			set(0)
		} else if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			set(n)
		}
	}
	return e
}

// refresh enables the settings while backend is nccl and nccl can run
// here, and says otherwise why they are disabled.
func (n *ncclControls) refresh(backend string) {
	why := ""
	switch {
	case !n.offered:
		why = "NCCL settings apply to the nccl backend, which joins GPU ranks: this device has none (run with --device cuda)."
	case n.reason != "":
		why = "NCCL settings are disabled: nccl cannot run here (" + n.reason + ")."
	case backend != "nccl":
		why = "NCCL settings apply when the allreduce backend is nccl."
	}
	for _, w := range []fyne.Disableable{n.proto, n.algo, n.minCh, n.maxCh, n.buff} {
		if why == "" {
			w.Enable()
		} else {
			w.Disable()
		}
	}
	if why == "" {
		n.why.SetText("Applied when the next nccl run creates its communicators (NCCL reads the buffer size once per process).")
	} else {
		n.why.SetText(why)
	}
}
