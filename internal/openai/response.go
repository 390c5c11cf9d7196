package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"rigscope/engine"
)

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// metaInfo is the response's extension field, under SGLang's names (its
// meta_info): the time queued and, for a speculative run, the drafter's
// figures for this request.
type metaInfo struct {
	QueueTime  float64 `json:"queue_time"`  // seconds waiting for the engine
	E2ELatency float64 `json:"e2e_latency"` // seconds from request to response end
	*specInfo
}

// specInfo: SGLang's per-request speculative-decoding fields, and the
// acceptance rate per draft position (vLLM's per-position counters).
type specInfo struct {
	VerifyCt        int       `json:"spec_verify_ct"`        // verify steps (drafts)
	DraftTokenNum   int       `json:"spec_draft_token_num"`  // tokens drafted
	AcceptTokenNum  int       `json:"spec_accept_token_num"` // drafted tokens accepted
	AcceptRate      float64   `json:"spec_accept_rate"`      // accepted / drafted
	AcceptLength    float64   `json:"spec_accept_length"`    // tokens per verify step: 1 + accepted / drafts
	AcceptHistogram []int     `json:"spec_accept_histogram"` // steps that accepted n drafts, n = 0..k
	AcceptPerPos    []float64 `json:"spec_accept_per_pos"`
}

func spec(st engine.Stats, drafting bool) *specInfo {
	if !drafting {
		return nil
	}
	si := &specInfo{VerifyCt: st.Drafts, DraftTokenNum: st.DraftTokens, AcceptTokenNum: st.AcceptedTokens,
		AcceptLength: st.MeanAcceptLen, AcceptHistogram: st.AcceptHist, AcceptPerPos: st.AcceptPerPos}
	if st.DraftTokens > 0 {
		si.AcceptRate = float64(st.AcceptedTokens) / float64(st.DraftTokens)
	}
	return si
}

// response writes one request's answer in the endpoint's object shapes.
type response struct {
	s        *Server
	p        *plan
	id       string
	created  int64
	wait     time.Duration
	received time.Time
}

func newResponse(s *Server, p *plan, wait time.Duration, received time.Time) *response {
	prefix := "cmpl-"
	if p.chat {
		prefix = "chatcmpl-"
	}
	return &response{s: s, p: p, id: newID(prefix), created: time.Now().Unix(), wait: wait, received: received}
}

func (r *response) object(chunk bool) string {
	switch {
	case r.p.chat && chunk:
		return "chat.completion.chunk"
	case r.p.chat:
		return "chat.completion"
	}
	return "text_completion"
}

// choice is choices[0]: a message, a delta or text.
func (r *response) choice(text string, finish *string, first, chunk bool) map[string]any {
	c := map[string]any{"index": 0, "logprobs": nil, "finish_reason": finish}
	switch {
	case !r.p.chat:
		c["text"] = text
	case !chunk:
		c["message"] = map[string]any{"role": "assistant", "content": text}
	case first:
		c["delta"] = map[string]any{"role": "assistant", "content": text}
	case finish != nil && text == "":
		c["delta"] = map[string]any{}
	default:
		c["delta"] = map[string]any{"content": text}
	}
	return c
}

func (r *response) body(chunk bool, choices []map[string]any) map[string]any {
	return map[string]any{"id": r.id, "object": r.object(chunk), "created": r.created, "model": r.s.opts.Model, "choices": choices}
}

func (r *response) usage(o outcome) usage {
	n := len(r.p.cfg.PromptIDs)
	return usage{PromptTokens: n, CompletionTokens: o.tokens, TotalTokens: n + o.tokens}
}

func (r *response) meta(o outcome) metaInfo {
	return metaInfo{QueueTime: r.wait.Seconds(), E2ELatency: time.Since(r.received).Seconds(),
		specInfo: spec(o.stats, r.p.cfg.Drafter.Kind != "" && r.p.cfg.Drafter.Kind != "none")}
}

func runError(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, Type: "server_error", Message: fmt.Sprintf("the engine failed: %v", err)}
}

// whole answers a non-streamed request once the run is over.
func (r *response) whole(w http.ResponseWriter, rc *http.ResponseController, o outcome) {
	rc.SetWriteDeadline(time.Now().Add(r.s.opts.WriteTimeout))
	switch o.finish {
	case "cancelled": // the client left; nobody reads an answer
		return
	case "error":
		r.s.refuse(w, runError(o.err))
		return
	}
	b := r.body(false, []map[string]any{r.choice(o.rest, &o.finish, false, false)})
	b["usage"], b["meta_info"] = r.usage(o), r.meta(o)
	writeJSON(w, http.StatusOK, b)
}

// stream answers as server-sent events while the run goes: a chunk per
// batch of new text (a slow client gets bigger batches, never a stalled
// engine), then the chunk with the finish reason, the usage chunk when
// asked, and [DONE]. A write that fails (the client left) cancels the run;
// stream returns only once the run has ended.
func (r *response) stream(w http.ResponseWriter, rc *http.ResponseController, g *generation, done <-chan outcome, cancel func()) outcome {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.SetWriteDeadline(time.Now().Add(r.s.opts.WriteTimeout))
	gone := rc.Flush() != nil // the headers go now: the client knows it is served
	if gone {
		cancel()
	}
	send := func(v any) {
		if gone {
			return
		}
		b, _ := json.Marshal(v)
		if v == nil {
			b = []byte("[DONE]")
		}
		rc.SetWriteDeadline(time.Now().Add(r.s.opts.WriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil || rc.Flush() != nil {
			gone = true
			cancel()
		}
	}
	first := true
	chunk := func(text string, finish *string) map[string]any {
		c := r.body(true, []map[string]any{r.choice(text, finish, first && r.p.chat, true)})
		first = false
		return c
	}
	if r.p.chat {
		send(chunk("", nil))
	}
	for {
		select {
		case <-g.notify:
			if text := g.take(); text != "" {
				send(chunk(text, nil))
			}
		case o := <-done:
			switch o.finish {
			case "cancelled":
				return o
			case "error":
				send(map[string]*apiError{"error": runError(o.err)})
			default:
				last := chunk(o.rest, &o.finish)
				last["meta_info"] = r.meta(o)
				send(last)
				if r.p.usage {
					u := r.body(true, []map[string]any{})
					u["usage"] = r.usage(o)
					send(u)
				}
			}
			send(nil)
			return o
		}
	}
}
