package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/app"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"rigscope/assets"
	"rigscope/engine"
)

// AppID is the application ID from FyneApp.toml; preferences live under it.
const AppID = "io.rigscope.panel"

// Options configure the panel.
type Options struct {
	ModelPath    string        // "" opens the embedded synthetic default
	DraftPath    string        // a draft model for the model drafter
	Autorun      string        // a prompt to run as soon as the model is loaded
	QuitAfterRun bool          // quit when the autorun ends; Run returns its error
	MaxTokens    int           // overrides the saved max tokens when > 0
	TP           int           // overrides the saved TP size when > 0
	Backend      string        // overrides the saved allreduce backend when set
	Tab          string        // the tab shown first: chat (default), dashboard, whatif or runs
	WindowSize   fyne.Size     // at start (zero: 1280x800); a taller one shows the whole dashboard in one screenshot
	DoneFile     string        // touched when the autorun ends (a screenshot cue)
	Linger       time.Duration // how long the window stays up after the autorun
	RunLogDir    string        // the engine's run logs: earlier runs are read back into the runs table

	Open      Opener
	Backends  func() []Choice                    // allreduce backends with availability
	TPSizes   func() []Choice                    // TP sizes with availability
	Dashboard func(eng Engine) fyne.CanvasObject // the live charts for a loaded engine; nil shows a placeholder
	Planner   func(eng Engine) WhatIfPlanner     // the What if tab's planner for a loaded engine; nil: no What if tab
	Report    io.Writer                          // where the responsiveness figures go at exit (nil: nowhere)
	Server    APIServer                          // the OpenAI API server the Server switch runs; nil: no Server section
	ServeAddr string                             // with Server: the switch starts on, at this address
}

// Panel is the main window's content and the glue between its views and the
// session. All its methods run on the UI goroutine.
type Panel struct {
	app  fyne.App
	win  fyne.Window
	opts Options
	post func(func())

	Chat     *ChatView
	Controls *ControlsView
	Runs     *RunsView
	WhatIf   *WhatIfView // nil without Options.Planner
	Server   *ServerView // nil without Options.Server
	Tabs     *container.AppTabs
	status   *widget.Label
	dashSlot *fyne.Container
	Content  fyne.CanvasObject

	ctx         context.Context // cancelled on SIGINT/SIGTERM: stops an export in progress
	session     *Session
	info        ModelInfo
	modelPicker *Picker
	loading     *ProgressDialog
	autorun     string
	runErr      error
	finished    chan struct{} // closed when the autorun ended (tests)
}

// NewPanel builds the panel in win; post runs functions on the UI goroutine
// (fyne.Do in the app, a queue in tests).
func NewPanel(a fyne.App, win fyne.Window, opts Options, post func(func())) *Panel {
	p := &Panel{app: a, win: win, opts: opts, post: post, ctx: context.Background(), autorun: opts.Autorun, finished: make(chan struct{})}
	settings := LoadSettings(a.Preferences())
	if opts.MaxTokens > 0 {
		settings.MaxTokens = opts.MaxTokens
	}
	// A draft model named on the command line or saved earlier must still
	// be there; the vocabulary is checked once the target is loaded.
	var draftProblem error
	if opts.DraftPath != "" {
		if kind, err := draftKind(opts.DraftPath); err != nil {
			draftProblem = fmt.Errorf("--draft %s: %w", opts.DraftPath, err)
		} else {
			settings.DraftPath, settings.Drafter = opts.DraftPath, kind
		}
	} else if settings.DraftPath != "" {
		if _, err := draftKind(settings.DraftPath); err != nil {
			draftProblem = fmt.Errorf("the saved draft model: %w", err)
			settings = clearDraft(settings)
		}
	}
	if opts.TP > 0 {
		settings.TP = opts.TP
	}
	if opts.Backend != "" {
		settings.Backend = opts.Backend
	}
	backends, tps := defaultChoices(opts)
	draftPicker := NewPicker(win, func(path, _ string) { p.ChooseDraft(path) })
	pickDraft := func(folder bool) {
		if folder {
			draftPicker.ShowFolder()
		} else {
			draftPicker.ShowFile()
		}
	}
	p.Controls = NewControlsView(settings, backends, tps, pickDraft, func(s Settings) {
		SaveSettings(a.Preferences(), s)
		p.updateChatInfo()
		p.whatIfSettings(s)
	})
	p.Controls.OnClearDraft = p.ClearDraft
	if draftProblem != nil {
		p.Controls.SetDraftProblem(draftProblem)
	}
	p.Chat = NewChatView(settings.MarkDrafts)
	p.Chat.SetHistory(a.Preferences().StringList(prefHistory))
	p.Chat.SetSystemPrompt(a.Preferences().String(prefSystem))
	p.Chat.OnSend = func(prompt string) {
		a.Preferences().SetStringList(prefHistory, p.Chat.HistoryPrompts())
		p.Send(prompt)
	}
	p.Chat.OnStop = func() {
		if p.session != nil {
			p.session.Stop()
		}
	}
	p.Chat.OnMarkDrafts = func(on bool) {
		s := p.Controls.Settings()
		s.MarkDrafts = on
		p.Controls.s = s
		SaveSettings(a.Preferences(), s)
	}
	p.Chat.OnRegenerate = p.Regenerate
	p.Chat.OnChanged = p.updateChatInfo
	p.Chat.OnSystem = func(s string) { a.Preferences().SetString(prefSystem, s) }
	p.Chat.SetReady(false)
	p.Runs = NewRunsView()
	p.Runs.OnExport = p.export
	p.Runs.OnNote = p.editNote
	p.loadEarlierRuns()
	p.dashSlot = container.NewStack(widget.NewLabel("The live dashboard appears once a model is loaded."))
	p.status = widget.NewLabel("no model loaded")
	p.status.Truncation = fyne.TextTruncateEllipsis
	p.modelPicker = NewPicker(win, func(path, format string) {
		if format == FormatEagle3 {
			p.modelPicker.Refused(fmt.Errorf("%s is an EAGLE-3 draft head, not a target model: choose it under Drafter (Folder…)", filepath.Base(path)))
			return
		}
		p.LoadModel(path)
	})
	p.modelPicker.Refused = func(err error) { showError(err, win) }
	draftPicker.Refused = func(err error) { p.Controls.SetDraftProblem(err); showError(err, win) }
	p.Chat.SetWelcome(p.welcomeContent())
	sideBox := p.Controls.Root
	if opts.Server != nil {
		p.Server = NewServerView(opts.Server, opts.ServeAddr)
		opts.Server.Watch(func(rec *RunRecord) { p.post(func() { p.servedRun(rec) }) })
		p.Controls.AddSection("OpenAI API server", p.Server.Root, opts.ServeAddr != "")
		if opts.ServeAddr != "" {
			p.Server.SetOn(true)
		}
	}
	side := container.NewVScroll(container.NewPadded(sideBox))
	split := container.NewHSplit(p.Chat.Root, side)
	split.Offset = 0.68
	p.Tabs = container.NewAppTabs(
		container.NewTabItem("Chat", split),
		container.NewTabItem("Dashboard", p.dashSlot),
		container.NewTabItem("Runs", p.Runs.Root),
	)
	for i, name := range []string{"chat", "dashboard", "runs"} {
		if strings.EqualFold(opts.Tab, name) {
			p.Tabs.SelectIndex(i)
		}
	}
	p.addWhatIf()
	if p.WhatIf != nil && strings.EqualFold(opts.Tab, "whatif") {
		p.Tabs.SelectIndex(2)
	}
	top := container.NewBorder(nil, nil, nil, container.NewHBox(p.modelPicker.Buttons("Model"), p.themeSelect()), p.status)
	p.Content = container.NewBorder(top, nil, nil, nil, p.Tabs)
	p.addShortcuts()
	return p
}

func defaultChoices(opts Options) (backends, tps []Choice) {
	if opts.Backends != nil {
		backends = opts.Backends()
	} else {
		backends = []Choice{{Name: "ring", Available: true}}
	}
	if opts.TPSizes != nil {
		tps = opts.TPSizes()
	} else {
		tps = []Choice{{Name: "1", Available: true}}
	}
	return backends, tps
}

// LoadModel opens path in the background behind a cancellable progress
// dialog; the previous model stays in use until the new one is ready.
func (p *Panel) LoadModel(path string) {
	if p.session != nil {
		if _, running := p.session.Running(); running {
			dialog.ShowInformation("Model busy", "Stop the run in flight before opening another model.", p.win)
			return
		}
	}
	if path != "" && !strings.HasPrefix(path, "synthetic:") {
		if _, err := CheckModelPath(path); err != nil {
			p.modelOpened(path, nil, err)
			return
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	name := "the synthetic default model"
	if path != "" {
		name = baseName(path)
	}
	prog := NewProgressDialog(p.win, "Opening "+name, cancel)
	p.loading = prog
	prog.Show()
	go func() {
		eng, err := p.opts.Open(ctx, path, func(pr engine.Progress) {
			p.post(func() { prog.Update(pr) })
		})
		cancel()
		p.post(func() {
			prog.Hide()
			p.loading = nil
			p.modelOpened(path, eng, err)
		})
	}()
}

func (p *Panel) modelOpened(path string, eng Engine, err error) {
	if err != nil {
		err = fmt.Errorf("open model: %w", err)
		p.status.SetText("no model loaded: " + err.Error())
		showError(err, p.win) // also under --autorun: the window shows why
		if p.autorun != "" {
			p.finishAutorun(err)
		}
		return
	}
	p.session = NewSession(eng, p.post)
	p.session.nextID = p.Runs.MaxID() // numbers continue after the runs already listed
	p.info = eng.Info()
	if path != "" {
		p.app.Preferences().SetString(prefLastModel, path)
		p.app.Preferences().SetStringList(prefRecentModels, addRecent(p.app.Preferences().StringList(prefRecentModels), path))
	}
	p.status.SetText(fmt.Sprintf("%s · %s · %s params · context %d", p.info.Name, p.info.Format, FormatParams(p.info.Params), p.info.MaxSeq))
	if p.opts.Dashboard != nil {
		p.dashSlot.Objects = []fyne.CanvasObject{p.opts.Dashboard(eng)}
		p.dashSlot.Refresh()
	}
	p.recheckDraft()
	p.Chat.SetWelcome(p.welcomeContent())
	p.whatIfModel(eng)
	p.Chat.SetReady(true)
	p.updateChatInfo()
	if p.autorun != "" {
		p.Chat.Remember(p.autorun)
		p.app.Preferences().SetStringList(prefHistory, p.Chat.HistoryPrompts())
		p.Send(p.autorun)
	}
}

// Send starts a run of prompt, rendered with the conversation so far, with
// the current settings.
func (p *Panel) Send(prompt string) {
	if p.session == nil {
		return
	}
	cfg, pl, err := p.runConfigFor(prompt)
	if err != nil {
		showError(err, p.win)
		if p.autorun != "" {
			p.finishAutorun(err)
		}
		return
	}
	p.Chat.SetTemplateInfo(pl.note)
	p.Chat.BeginTurn(prompt, Describe(cfg))
	var progress *ProgressDialog
	_, err = p.session.Start(cfg, RunHandlers{
		Tokens: p.Chat.AppendTokens,
		Done: func(rec *RunRecord, err error) {
			if progress != nil {
				progress.Hide()
			}
			p.runDone(rec, err)
		},
		Progress: func(pr engine.Progress) {
			if pr.Total > 0 && pr.Done >= pr.Total {
				if progress != nil {
					progress.Hide()
					progress = nil
				}
				return
			}
			if progress == nil {
				progress = NewProgressDialog(p.win, "Preparing the run", func() { p.session.Stop() })
				progress.Show()
			}
			progress.Update(pr)
		},
	})
	if err != nil {
		p.Chat.FinishTurn(&RunRecord{Config: cfg, Err: err.Error()})
		if p.autorun != "" {
			p.finishAutorun(err)
		}
		return
	}
	p.Controls.SetInFlight(&cfg)
	p.Chat.SetRunning(true)
}

// runFinisher is a dashboard that shows each finished run's figures (the
// same ones as the chat's stats row).
type runFinisher interface{ RunFinished(rec *RunRecord) }

func (p *Panel) runDone(rec *RunRecord, err error) {
	p.Chat.FinishTurn(rec)
	p.addRun(rec)
	p.whatIfRun(rec)
	p.Controls.SetInFlight(nil)
	p.Chat.SetRunning(false)
	p.updateChatInfo()
	for _, o := range p.dashSlot.Objects {
		if d, ok := o.(runFinisher); ok {
			d.RunFinished(rec)
		}
	}
	if rec.Err != "" && strings.Contains(rec.Err, "draft model") {
		p.Controls.SetDraftProblem(errors.New(rec.Err))
	}
	if p.autorun != "" {
		p.finishAutorun(err)
	}
}

// servedRun adds a run the API server made to the runs table, numbered
// in the loaded model's sequence.
func (p *Panel) servedRun(rec *RunRecord) {
	if p.session != nil {
		p.session.record(rec)
	}
	p.addRun(rec)
}

// finishAutorun records the autorun's outcome and, with QuitAfterRun,
// touches DoneFile and quits after Linger.
func (p *Panel) finishAutorun(err error) {
	p.autorun = ""
	p.runErr = err
	close(p.finished)
	if !p.opts.QuitAfterRun {
		return
	}
	if p.opts.DoneFile != "" {
		if werr := os.WriteFile(p.opts.DoneFile, nil, 0o644); werr != nil && p.runErr == nil {
			p.runErr = fmt.Errorf("done file: %w", werr)
		}
	}
	time.AfterFunc(p.opts.Linger, func() { p.post(p.app.Quit) })
}

// Run opens the panel window and blocks until it is closed. With
// QuitAfterRun it returns the autorun's error (nil when the run succeeded).
func Run(ctx context.Context, opts Options) error {
	if opts.Open == nil {
		return errors.New("ui: no model opener")
	}
	a := app.NewWithID(AppID)
	a.SetIcon(fyne.NewStaticResource("icon.png", assets.Icon))
	win := a.NewWindow("rigscope")
	p := NewPanel(a, win, opts, fyne.Do)
	p.ctx = ctx
	win.SetContent(p.Content)
	size := fyne.NewSize(1280, 800)
	if opts.WindowSize.Width > 0 && opts.WindowSize.Height > 0 {
		size = opts.WindowSize
	}
	win.Resize(size)
	win.SetMaster()
	go func() {
		<-ctx.Done()
		fyne.Do(a.Quit)
	}()
	a.Lifecycle().SetOnStarted(func() { p.LoadModel(opts.ModelPath) })
	win.ShowAndRun()
	if p.session != nil {
		p.session.Stop()
		p.session.Wait()
		if opts.Report != nil {
			fmt.Fprintln(opts.Report, "ui:", p.session.RefreshReport())
		}
	}
	if opts.QuitAfterRun && opts.Autorun != "" {
		select {
		case <-p.finished:
		default:
			return errors.New("the window closed before the autorun finished")
		}
		return p.runErr
	}
	return nil
}
