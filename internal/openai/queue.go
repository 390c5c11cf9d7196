package openai

import (
	"context"
	"errors"
	"sync"
	"time"
)

// errBusy: the queue is full.
var errBusy = errors.New("queue full")

// queue admits requests to the engine one run at a time, with up to
// waiting more queued behind it, in arrival order (a channel serves its
// blocked senders first come, first served). It is the one place
// continuous batching would change: a batcher would admit several runs at
// once here.
type queue struct {
	admitted chan struct{} // one per request running or waiting: cap 1+waiting
	running  chan struct{} // cap 1: the engine's one run

	mu      sync.Mutex
	meanRun time.Duration // moving mean of run time, for Retry-After
}

func newQueue(waiting int) *queue {
	return &queue{admitted: make(chan struct{}, 1+waiting), running: make(chan struct{}, 1)}
}

// enter waits for the engine and returns how long it waited; errBusy when
// the queue is full, ctx's error when the client left while waiting.
func (q *queue) enter(ctx context.Context) (time.Duration, error) {
	select {
	case q.admitted <- struct{}{}:
	default:
		return 0, errBusy
	}
	start := time.Now()
	select {
	case q.running <- struct{}{}:
		return time.Since(start), nil
	case <-ctx.Done():
		<-q.admitted
		return time.Since(start), ctx.Err()
	}
}

// leave frees the engine after a run that took ran.
func (q *queue) leave(ran time.Duration) {
	q.mu.Lock()
	if q.meanRun == 0 {
		q.meanRun = ran
	} else {
		q.meanRun = (7*q.meanRun + ran) / 8
	}
	q.mu.Unlock()
	<-q.running
	<-q.admitted
}

// retryAfter is the whole seconds until the queue has likely drained: the
// requests admitted times the mean run time, at least 1.
func (q *queue) retryAfter() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return max(1, int((time.Duration(len(q.admitted))*q.meanRun+time.Second-1)/time.Second))
}
