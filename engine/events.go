package engine

// EventKind says which field of an Event is set.
type EventKind uint8

const (
	EventTokens   EventKind = iota + 1 // Tokens: newly generated tokens
	EventStep                          // Step: one decode/speculative step finished
	EventProgress                      // Progress: long work (load, calibration) advanced
	EventDone                          // Stats: the run ended (Err set on failure)
	EventWarning                       // Warning: something was wrong and repaired (a bad calibration cache)
)

// Event is what a run reports while it goes. Sinks are called on the run's
// goroutine and must not block; the panel batches them per frame.
type Event struct {
	Kind     EventKind
	Tokens   []Token
	Step     StepStats
	Progress Progress
	Stats    Stats
	Err      error
	Warning  string
}

// Progress describes long work; Total 0 means unknown.
type Progress struct {
	What        string
	Done, Total int64
}
