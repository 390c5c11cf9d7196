package ui

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"rigscope/engine"
)

// RunRecord is one finished (or failed) run as the runs table and the
// exporters see it. It is built on the run goroutine and handed to the UI
// goroutine once the run ends; after that it is never written again.
type RunRecord struct {
	ID      int
	Model   string
	Started time.Time
	Config  engine.RunConfig
	Stats   engine.Stats
	Steps   []engine.StepStats
	Text    string // the generated text
	Err     string // "" when the run succeeded
	LogPath string // the JSONL log the engine wrote as the run went ("" if none)
	Source  string // who started it: "" the panel, SourceAPI the OpenAI API server
	FromLog bool   // read back from its run log at start (an earlier session)
	Note    string // the user's note on the run
}

// SourceAPI marks a run the panel's API server made for a client.
const SourceAPI = "api"

// record numbers a run the panel did not start (an API request) in the
// session's sequence.
func (s *Session) record(rec *RunRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	rec.ID = s.nextID
}

// RunHandlers receive a run's output on the UI goroutine.
type RunHandlers struct {
	Tokens func(toks []engine.Token)       // a frame's worth of new tokens
	Done   func(rec *RunRecord, err error) // the run ended; rec is final
	// Progress reports long work inside a run (an allreduce calibration
	// sweep); Done == Total > 0 means it finished. May be nil.
	Progress func(engine.Progress)
}

// Session owns the loaded engine and the one run that may be in flight. It
// batches a run's tokens per frame and posts them to the UI goroutine, so the
// UI never blocks on the engine and refreshes at most once per frame. Run
// logs are the engine's (engine.Options.LogDir).
type Session struct {
	eng   Engine
	post  func(func()) // runs a function on the UI goroutine (fyne.Do)
	frame time.Duration

	mu     sync.Mutex
	active *activeRun
	nextID int

	longestCallback atomic.Int64 // ns: the slowest function posted to the UI goroutine
	longestDelay    atomic.Int64 // ns: the longest wait between posting and running

	timesMu   sync.Mutex
	callbacks []time.Duration // every UI update's duration (bounded), for percentiles
}

type activeRun struct {
	cfg     engine.RunConfig
	cancel  context.CancelFunc
	pending []engine.Token
	text    strings.Builder // everything generated so far (run goroutine only)
	done    chan struct{}
}

// ErrRunInFlight is returned by Start while a run is going.
var ErrRunInFlight = errors.New("a run is in flight; stop it or wait for it to end")

// NewSession drives eng, posting UI work through post (fyne.Do in the app).
func NewSession(eng Engine, post func(func())) *Session {
	return &Session{eng: eng, post: post, frame: time.Second / 60}
}

// Engine returns the loaded engine.
func (s *Session) Engine() Engine { return s.eng }

// ui posts fn to the UI goroutine and measures how long it waited and ran.
func (s *Session) ui(fn func()) {
	posted := time.Now()
	s.post(func() {
		began := time.Now()
		fn()
		storeMax(&s.longestDelay, began.Sub(posted))
		took := time.Since(began)
		storeMax(&s.longestCallback, took)
		s.timesMu.Lock()
		if len(s.callbacks) < 1<<16 {
			s.callbacks = append(s.callbacks, took)
		}
		s.timesMu.Unlock()
	})
}

// RefreshReport summarizes the UI updates posted so far: how many, their
// median and 99th percentile duration, the longest, and the longest wait
// for the UI goroutine.
func (s *Session) RefreshReport() string {
	s.timesMu.Lock()
	p50, p99 := percentiles(s.callbacks)
	n := len(s.callbacks)
	s.timesMu.Unlock()
	cb, delay := s.LongestRefresh()
	return fmt.Sprintf("%d UI updates: p50 %v, p99 %v, longest %v; longest wait for the UI goroutine %v",
		n, p50.Round(time.Microsecond), p99.Round(time.Microsecond), cb.Round(time.Microsecond), delay.Round(time.Microsecond))
}

func storeMax(a *atomic.Int64, d time.Duration) {
	for {
		old := a.Load()
		if int64(d) <= old || a.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// LongestRefresh reports the slowest UI update so far (time spent in one
// posted function) and the longest time one waited to be run.
func (s *Session) LongestRefresh() (callback, delay time.Duration) {
	return time.Duration(s.longestCallback.Load()), time.Duration(s.longestDelay.Load())
}

// Running returns the config of the run in flight, if any.
func (s *Session) Running() (engine.RunConfig, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return engine.RunConfig{}, false
	}
	return s.active.cfg, true
}

// Stop cancels the run in flight; it ends with stop reason "cancelled".
func (s *Session) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		s.active.cancel()
	}
}

// Wait blocks until no run is in flight (for tests and shutdown). It must
// not be called on the UI goroutine.
func (s *Session) Wait() {
	s.mu.Lock()
	a := s.active
	s.mu.Unlock()
	if a != nil {
		<-a.done
	}
}

// Start begins a run with cfg, which is copied and never changes after.
func (s *Session) Start(cfg engine.RunConfig, h RunHandlers) (*RunRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		return nil, ErrRunInFlight
	}
	s.nextID++
	cfg.PromptIDs = slices.Clone(cfg.PromptIDs)
	rec := &RunRecord{ID: s.nextID, Model: s.eng.Info().Name, Started: time.Now(), Config: cfg}
	ctx, cancel := context.WithCancel(context.Background())
	a := &activeRun{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	s.active = a
	go s.run(ctx, a, rec, h)
	return rec, nil
}

// sink receives engine events on the run goroutine; it only appends under
// the lock, never waiting on the UI.
func (s *Session) sink(a *activeRun, rec *RunRecord, h RunHandlers) func(engine.Event) {
	return func(ev engine.Event) {
		switch ev.Kind {
		case engine.EventTokens:
			s.mu.Lock()
			a.pending = append(a.pending, ev.Tokens...)
			s.mu.Unlock()
			for _, t := range ev.Tokens {
				a.text.WriteString(t.Text)
			}
		case engine.EventStep:
			rec.Steps = append(rec.Steps, ev.Step)
		case engine.EventProgress:
			if h.Progress != nil {
				pr := ev.Progress
				s.post(func() { h.Progress(pr) })
			}
		}
	}
}

func (s *Session) hasPending(a *activeRun) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(a.pending) > 0
}

func (s *Session) take(a *activeRun) []engine.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := a.pending
	a.pending = nil
	return t
}

func (s *Session) run(ctx context.Context, a *activeRun, rec *RunRecord, h RunHandlers) {
	stopFrames := make(chan struct{})
	framesDone := make(chan struct{})
	go func() {
		// At most one UI update per frame, and never more than one queued:
		// if the UI goroutine falls behind, the next update simply carries
		// more tokens, so the queue (and the delay) cannot grow.
		defer close(framesDone)
		var queued atomic.Bool
		t := time.NewTicker(s.frame)
		defer t.Stop()
		for {
			select {
			case <-stopFrames:
				return
			case <-t.C:
				if h.Tokens != nil && s.hasPending(a) && queued.CompareAndSwap(false, true) {
					s.ui(func() {
						queued.Store(false)
						if toks := s.take(a); len(toks) > 0 {
							h.Tokens(toks)
						}
					})
				}
			}
		}
	}()
	stats, err := s.eng.Run(ctx, a.cfg, s.sink(a, rec, h))
	close(stopFrames)
	<-framesDone
	if err != nil && stats.StopReason == "" {
		stats.StopReason = "error"
	}
	if err != nil {
		rec.Err = err.Error()
	}
	rec.Stats, rec.LogPath = stats, stats.LogPath
	rec.Text = a.text.String()
	a.cancel()
	s.mu.Lock()
	s.active = nil
	s.mu.Unlock()
	s.ui(func() {
		if rest := s.take(a); len(rest) > 0 && h.Tokens != nil {
			h.Tokens(rest)
		}
		if h.Done != nil {
			h.Done(rec, err)
		}
	})
	close(a.done)
}

// percentiles returns the 50th and 99th percentiles (nearest rank).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	return at(0.50), at(0.99)
}

func baseName(p string) string { return filepath.Base(filepath.Clean(p)) }
