package ui

import (
	"rigscope/engine/spec/eagle3"

	"fmt"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"rigscope/engine"
	"rigscope/engine/tp"
)

// ControlsView holds the run controls. Every change updates Settings at
// once; a run in flight keeps the config it started with, and the view says
// so while the two differ.
type ControlsView struct {
	Root fyne.CanvasObject

	s        Settings
	onChange func(Settings)

	backend, tp, drafter *choiceGroup
	nccl                 *ncclControls
	draftPath            *widget.Label
	draftWhy             *widget.Label // why the last draft choice was refused
	clearDraft           *widget.Button
	sections             *widget.Accordion
	ngramMin, ngramMax   *widget.Entry
	k                    *widget.Entry
	shape                *widget.Select
	temp, topP, seed     *widget.Entry
	maxTokens            *widget.Entry
	mode                 *widget.Select
	problem              *widget.Label // the first invalid value, if any
	inFlight             *widget.Label // what the run in flight uses
	running              *engine.RunConfig
	chatOK               bool

	// OnClearDraft is called when the user clears the chosen draft.
	OnClearDraft func()
}

var shapes = []string{"chain", "tree ×2", "tree ×3", "tree ×4"}

// ncclSection is the NCCL settings' place among the sections.
const ncclSection = 1

// NewControlsView shows s. backends and tpSizes list every choice with its
// availability on this machine; pickDraft opens the draft model picker (nil
// hides the button). onChange receives every valid change.
// pickDraft opens a file dialog (folder false: GGUF, llama2.c) or a folder
// dialog (folder true: a Hugging Face model or an EAGLE-3 head).
func NewControlsView(s Settings, backends, tpSizes []Choice, pickDraft func(folder bool), onChange func(Settings)) *ControlsView {
	c := &ControlsView{s: s, onChange: func(Settings) {}, chatOK: true}
	c.backend = newChoiceGroup(backends, s.Backend, true, func(v string) {
		c.update(func(s *Settings) { s.Backend = v })
		c.nccl.refresh(c.s.Backend)
		if c.s.Backend == "nccl" && c.sections != nil {
			c.sections.Open(ncclSection)
		}
	})
	c.nccl = newNCCLControls(s.NCCL, backends, func(edit func(*tp.NCCLSettings)) { c.update(func(s *Settings) { edit(&s.NCCL) }) })
	c.nccl.refresh(s.Backend)
	c.backend.cols = 3 // eight backends in three short rows: the controls fit 800 px
	c.backend.setChoices(backends)
	c.tp = newChoiceGroup(tpSizes, strconv.Itoa(s.TP), true, func(v string) {
		n, _ := strconv.Atoi(v)
		c.update(func(s *Settings) { s.TP = n })
	})
	c.drafter = newChoiceGroup(c.drafterChoices(), s.Drafter, true, func(v string) { c.update(func(s *Settings) { s.Drafter = v }) })
	c.draftPath = widget.NewLabel(draftLabel(s.DraftPath))
	c.draftPath.Truncation = fyne.TextTruncateEllipsis
	c.ngramMin = intEntry(s.NgramMin, func(n int) { c.update(func(s *Settings) { s.NgramMin = n }) })
	c.ngramMax = intEntry(s.NgramMax, func(n int) { c.update(func(s *Settings) { s.NgramMax = n }) })
	c.k = intEntry(s.K, func(n int) { c.update(func(s *Settings) { s.K = n }) })
	c.shape = widget.NewSelect(shapes, func(v string) {
		for i, sh := range shapes {
			if sh == v {
				c.update(func(s *Settings) { s.Tree = map[bool]int{true: 0, false: i + 1}[i == 0] })
			}
		}
	})
	c.shape.SetSelectedIndex(max(s.Tree-1, 0))
	c.temp = floatEntry(s.Temperature, func(f float32) { c.update(func(s *Settings) { s.Temperature = f }) })
	c.topP = floatEntry(s.TopP, func(f float32) { c.update(func(s *Settings) { s.TopP = f }) })
	c.seed = widget.NewEntry()
	c.seed.SetText(strconv.FormatUint(s.Seed, 10))
	c.seed.OnChanged = func(t string) {
		n, err := strconv.ParseUint(t, 10, 64)
		if err != nil {
			c.problem.SetText("seed: want a non-negative integer")
			return
		}
		c.update(func(s *Settings) { s.Seed = n })
	}
	c.maxTokens = intEntry(s.MaxTokens, func(n int) { c.update(func(s *Settings) { s.MaxTokens = n }) })
	c.mode = widget.NewSelect([]string{modeChatLabel, modeRawLabel}, func(v string) {
		if !c.chatOK {
			return // shown as raw because the model has no template; the setting stays
		}
		c.update(func(s *Settings) { s.Mode = map[bool]string{true: ModeChat, false: ModeRaw}[v == modeChatLabel] })
	})
	c.mode.SetSelectedIndex(map[bool]int{true: 0, false: 1}[s.Mode != ModeRaw])
	c.problem = widget.NewLabel("")
	c.problem.Importance = widget.DangerImportance
	c.problem.Wrapping = fyne.TextWrapWord
	c.inFlight = widget.NewLabel("")
	c.inFlight.Importance = widget.WarningImportance
	c.inFlight.Wrapping = fyne.TextWrapWord
	c.inFlight.Hide()

	c.draftWhy = reasonLabel("")
	c.draftWhy.Importance = widget.DangerImportance
	c.draftWhy.Hide()
	c.clearDraft = widget.NewButton("Clear", func() {
		if c.OnClearDraft != nil {
			c.OnClearDraft()
		} else {
			c.SetDraft("", "")
		}
	})
	if s.DraftPath == "" {
		c.clearDraft.Disable()
	}
	draftRow := container.NewBorder(nil, nil, nil, c.clearDraft, c.draftPath)
	if pickDraft != nil {
		buttons := container.NewHBox(
			widget.NewButton("File…", func() { pickDraft(false) }),
			widget.NewButton("Folder…", func() { pickDraft(true) }),
			c.clearDraft)
		draftRow = container.NewBorder(nil, nil, nil, buttons, c.draftPath)
	}
	drafting := widget.NewForm(
		widget.NewFormItem("n-gram sizes", container.NewGridWithColumns(2, c.ngramMin, c.ngramMax)),
		widget.NewFormItem("k", c.k),
		widget.NewFormItem("shape", c.shape),
	)
	sampling := widget.NewForm(
		widget.NewFormItem("temperature", c.temp),
		widget.NewFormItem("top-p", c.topP),
		widget.NewFormItem("seed", c.seed),
		widget.NewFormItem("max tokens", c.maxTokens),
		widget.NewFormItem("prompt", c.mode),
	)
	c.sections = widget.NewAccordion(
		widget.NewAccordionItem("Parallelism", container.NewVBox(heading("Allreduce backend"), c.backend.box, heading("TP size"), c.tp.box)),
		widget.NewAccordionItem("NCCL", c.nccl.box),
		widget.NewAccordionItem("Drafter", container.NewVBox(c.drafter.box, draftRow, c.draftWhy, drafting)),
		widget.NewAccordionItem("Sampling", sampling),
	)
	c.sections.MultiOpen = true
	c.sections.OpenAll()
	if s.Backend != "nccl" {
		c.sections.Close(ncclSection) // opened when nccl is chosen: the controls fit 800 px
	}
	c.Root = container.NewVBox(c.sections, c.problem, c.inFlight)
	c.onChange = onChange
	return c
}

func heading(s string) *widget.Label {
	return widget.NewLabelWithStyle(s, fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
}

func draftLabel(p string) string {
	if p == "" {
		return "draft model: none chosen"
	}
	return "draft model: " + baseName(p)
}

func (c *ControlsView) drafterChoices() []Choice {
	head := c.s.DraftPath != "" && eagle3.IsHead(c.s.DraftPath)
	model := Choice{Name: DrafterModel, Available: c.s.DraftPath != "" && !head}
	switch {
	case c.s.DraftPath == "":
		model.Reason = "choose a draft model file first"
	case head:
		model.Reason = "the chosen draft is an EAGLE-3 head"
	}
	eagle := Choice{Name: DrafterEagle3, Available: head}
	if !head {
		eagle.Reason = "choose an EAGLE-3 head folder (Folder…)"
	}
	return []Choice{{Name: DrafterNone, Available: true}, {Name: DrafterNgram, Available: true}, model, eagle}
}

// update applies edit to a copy of the settings and passes it on if valid.
func (c *ControlsView) update(edit func(*Settings)) {
	next := c.s
	edit(&next)
	if err := next.Validate(); err != nil {
		if c.problem != nil {
			c.problem.SetText(err.Error())
		}
		return
	}
	c.s = next
	if c.problem != nil {
		c.problem.SetText("")
		c.refreshInFlight()
	}
	if c.onChange != nil {
		c.onChange(next)
	}
}

// Settings returns the settings the next run will use.
func (c *ControlsView) Settings() Settings { return c.s }

// Labels of the prompt-mode choice.
const (
	modeChatLabel = "Chat (model's template)"
	modeRawLabel  = "Raw completion"
)

// SetDraft records a checked draft (path "" clears it) and selects its
// drafter kind (DrafterModel or DrafterEagle3); clearing falls back to no
// drafter when a draft was in use.
func (c *ControlsView) SetDraft(path, kind string) {
	c.draftWhy.Hide()
	if path == "" {
		c.update(func(s *Settings) { *s = clearDraft(*s) })
		c.clearDraft.Disable()
	} else {
		c.update(func(s *Settings) { s.DraftPath, s.Drafter = path, kind })
		c.clearDraft.Enable()
	}
	c.draftPath.SetText(draftLabel(c.s.DraftPath))
	c.drafter.selected = c.s.Drafter
	c.drafter.setChoices(c.drafterChoices())
}

// SetDraftProblem shows why a draft choice was refused, beside the
// drafter control; the settings keep the previous choice.
func (c *ControlsView) SetDraftProblem(err error) {
	c.draftWhy.SetText(err.Error())
	c.draftWhy.Show()
}

// DraftProblem returns the refusal shown beside the drafter ("" for none).
func (c *ControlsView) DraftProblem() string {
	if !c.draftWhy.Visible() {
		return ""
	}
	return c.draftWhy.Text
}

// SetChatAvailable says whether the loaded model has a chat template; the
// prompt choice shows raw completion (without changing the saved
// setting) while it has none.
func (c *ControlsView) SetChatAvailable(ok bool) {
	if ok == c.chatOK {
		return
	}
	c.chatOK = ok
	if !ok {
		c.mode.Selected = modeRawLabel + " (no chat template)"
		c.mode.Disable()
	} else {
		c.mode.Selected = map[bool]string{true: modeChatLabel, false: modeRawLabel}[c.s.Mode != ModeRaw]
		c.mode.Enable()
	}
	c.mode.Refresh()
}

// AddSection adds a collapsible section under the run controls.
func (c *ControlsView) AddSection(title string, content fyne.CanvasObject, open bool) {
	c.sections.Append(widget.NewAccordionItem(title, content))
	if open {
		c.sections.Open(len(c.sections.Items) - 1)
	}
}

// SetInFlight tells the view which config the run in flight uses (nil when
// idle), so it can say that changes wait for the next run.
func (c *ControlsView) SetInFlight(cfg *engine.RunConfig) {
	c.running = cfg
	c.refreshInFlight()
}

func (c *ControlsView) refreshInFlight() {
	if c.running == nil {
		c.inFlight.Hide()
		return
	}
	next := c.s.RunConfig(c.running.Prompt, c.running.Template)
	msg := "Run in flight: " + Describe(*c.running) + "."
	if Describe(next) != Describe(*c.running) {
		msg += " Your changes apply to the next run: " + Describe(next) + "."
	}
	c.inFlight.SetText(msg)
	c.inFlight.Show()
}

func intEntry(v int, set func(int)) *widget.Entry {
	e := widget.NewEntry()
	e.SetText(strconv.Itoa(v))
	e.Validator = func(t string) error {
		if _, err := strconv.Atoi(t); err != nil {
			return fmt.Errorf("want an integer")
		}
		return nil
	}
	e.OnChanged = func(t string) {
		if n, err := strconv.Atoi(t); err == nil {
			set(n)
		}
	}
	return e
}

func floatEntry(v float32, set func(float32)) *widget.Entry {
	e := widget.NewEntry()
	e.SetText(strconv.FormatFloat(float64(v), 'g', -1, 32))
	e.Validator = func(t string) error {
		if _, err := strconv.ParseFloat(t, 32); err != nil {
			return fmt.Errorf("want a number")
		}
		return nil
	}
	e.OnChanged = func(t string) {
		if f, err := strconv.ParseFloat(t, 32); err == nil {
			set(float32(f))
		}
	}
	return e
}

// choiceGroup shows one radio button per choice, in a column with each
// unavailable choice's reason beside it, or in a row with the reasons
// listed underneath. Unavailable choices are disabled.
type choiceGroup struct {
	box        *fyne.Container
	horizontal bool
	radios     map[string]*widget.RadioGroup
	cols       int // horizontal: lay the choices in a grid of this many columns (0: one row)
	selected   string
	onSelect   func(string)
}

func newChoiceGroup(choices []Choice, selected string, horizontal bool, onSelect func(string)) *choiceGroup {
	g := &choiceGroup{box: container.NewVBox(), selected: selected, horizontal: horizontal}
	g.setChoices(choices)
	g.onSelect = onSelect
	return g
}

func reasonLabel(text string) *widget.Label {
	why := widget.NewLabel(text)
	why.TextStyle.Italic = true
	why.Importance = widget.LowImportance
	why.Wrapping = fyne.TextWrapWord
	return why
}

func (g *choiceGroup) setChoices(choices []Choice) {
	g.box.RemoveAll()
	g.radios = map[string]*widget.RadioGroup{}
	var row *fyne.Container
	if g.cols > 0 {
		row = container.NewGridWithColumns(g.cols)
	} else {
		row = container.NewHBox()
	}
	var reasons []string
	for _, ch := range choices {
		name := ch.Name
		r := widget.NewRadioGroup([]string{name}, nil)
		r.Required = true
		if name == g.selected {
			r.Selected = name
		}
		r.OnChanged = func(v string) {
			if v == name {
				g.SetSelected(name)
			}
		}
		g.radios[name] = r
		if !ch.Available {
			r.Disable()
		}
		switch {
		case g.horizontal:
			row.Add(r)
			if !ch.Available {
				reasons = append(reasons, name+": "+ch.Reason)
			}
		case !ch.Available:
			g.box.Add(container.NewBorder(nil, nil, r, nil, reasonLabel(ch.Reason)))
		default:
			g.box.Add(r)
		}
	}
	if g.horizontal {
		g.box.Add(row)
		if len(reasons) > 0 {
			g.box.Add(reasonLabel(strings.Join(reasons, "; ")))
		}
	}
}

// SetSelected selects name (if offered and available) and clears the rest.
func (g *choiceGroup) SetSelected(name string) {
	r, ok := g.radios[name]
	if !ok || r.Disabled() {
		return
	}
	g.selected = name
	for n, other := range g.radios {
		if n != name && other.Selected != "" {
			other.Selected = ""
			other.Refresh()
		}
	}
	if r.Selected != name {
		r.Selected = name
		r.Refresh()
	}
	if g.onSelect != nil {
		g.onSelect(name)
	}
}
