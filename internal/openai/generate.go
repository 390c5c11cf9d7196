package openai

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"rigscope/engine"
	"rigscope/engine/tokenizer"
)

// plan is a validated request: what to run and how to answer.
type plan struct {
	chat   bool
	cfg    engine.RunConfig // its Stop holds the request's stop strings
	stream bool
	usage  bool // stream_options.include_usage
}

// parse turns a request body into a plan, or the error to answer with.
func (s *Server) parse(body []byte, chat bool) (*plan, *apiError) {
	req, e := decodeRequest(body)
	if e != nil {
		return nil, e
	}
	if e := req.notImplemented(); e != nil {
		return nil, e
	}
	if req.Model != "" && req.Model != s.opts.Model {
		return nil, (&apiError{status: http.StatusNotFound, Type: "invalid_request_error", Param: ptr("model"),
			Message: fmt.Sprintf("The model `%s` does not exist: this server serves `%s` (GET /v1/models lists it)", req.Model, s.opts.Model)}).withCode("model_not_found")
	}
	p := &plan{chat: chat, cfg: s.opts.Base, stream: req.Stream}
	p.usage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	var err *apiError
	if p.cfg.PromptIDs, err = s.prompt(req, chat); err != nil {
		return nil, err
	}
	if p.cfg.Stop, err = req.stops(); err != nil {
		return nil, err
	}
	if err := s.length(req, p); err != nil {
		return nil, err
	}
	if err := sampling(req, &p.cfg.Sampling); err != nil {
		return nil, err
	}
	p.cfg.IgnoreEOS = req.IgnoreEOS
	if chat {
		p.cfg.Template = s.opts.ChatTemplate // the engine also stops at its end-of-turn token
	}
	return p, nil
}

func ptr(s string) *string { return &s }

// prompt tokenizes the request's prompt: chat messages through the
// model's chat template, or the completions prompt.
func (s *Server) prompt(req *request, chat bool) ([]int32, *apiError) {
	tok := s.opts.Tokenizer
	if !chat {
		if len(req.Messages) > 0 {
			return nil, invalid("messages", "messages belong to /v1/chat/completions; /v1/completions takes prompt")
		}
		text, ids, e := req.completionPrompt()
		if e != nil {
			return nil, e
		}
		for i, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				return nil, invalid("prompt", "prompt[%d] is token %d, outside the vocabulary 0..%d", i, id, tok.VocabSize()-1)
			}
		}
		if ids == nil {
			ids = tok.Encode(text, true)
		}
		if len(ids) == 0 {
			return nil, invalid("prompt", "prompt is empty and the model adds no BOS token: send at least one token of text")
		}
		return ids, nil
	}
	if len(req.Prompt) > 0 {
		return nil, invalid("prompt", "prompt belongs to /v1/completions; /v1/chat/completions takes messages")
	}
	if len(req.Messages) == 0 {
		return nil, invalid("messages", "messages is empty: send at least one {\"role\": \"user\", \"content\": ...}")
	}
	if s.opts.ChatTemplate == "" && s.opts.OwnTemplate.Source == "" {
		return nil, invalid("messages", "model %s has no chat template this server knows; start it with --chat-template llama3, chatml or llama2, or use /v1/completions", s.opts.Model)
	}
	msgs := make([]tokenizer.Message, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		case "developer": // OpenAI's newer name for system
			m.Role = "system"
		default:
			return nil, invalid(fmt.Sprintf("messages[%d].role", i), "messages[%d].role is %q; this server takes system, user and assistant", i, m.Role)
		}
		text, e := m.text(i)
		if e != nil {
			return nil, e
		}
		msgs[i] = tokenizer.Message{Role: m.Role, Content: text}
	}
	text, err := tokenizer.FormatChat(s.opts.OwnTemplate, s.opts.ChatTemplate, msgs, true)
	if errors.Is(err, tokenizer.ErrTemplate) {
		return nil, invalid("messages", "%v; send the text to /v1/completions for a raw completion, or start the server with --chat-template llama3, chatml or llama2", err)
	}
	if err != nil {
		return nil, invalid("messages", "%v", err)
	}
	// The model's own template writes BOS itself, as transformers'
	// apply_chat_template expects; the built-in formats leave it to Encode.
	return tok.Encode(text, s.opts.OwnTemplate.Source == ""), nil
}

// length sets the completion's length: max_completion_tokens or
// max_tokens, or what the context leaves; prompt plus completion must fit.
func (s *Server) length(req *request, p *plan) *apiError {
	n, param := req.MaxTokens, "max_tokens"
	if req.MaxCompletionTokens != nil {
		n, param = req.MaxCompletionTokens, "max_completion_tokens"
	}
	prompt, ctx := len(p.cfg.PromptIDs), s.opts.CtxLen
	if n != nil && *n < 1 {
		return invalid(param, "%s is %d; it must be at least 1", param, *n)
	}
	if prompt >= ctx {
		where := "prompt"
		if p.chat {
			where = "messages"
		}
		return invalid(where, "This model's maximum context length is %d tokens. However, your prompt is %d tokens, which leaves no room for a completion. Please shorten the prompt.", ctx, prompt).withCode("context_length_exceeded")
	}
	if n == nil {
		p.cfg.MaxTokens = ctx - prompt
		return nil
	}
	if prompt+*n > ctx {
		return invalid(param, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or of the completion.", ctx, prompt+*n, prompt, *n).withCode("context_length_exceeded")
	}
	p.cfg.MaxTokens = *n
	return nil
}

// sampling sets the sampler: OpenAI's defaults (temperature 1, top_p 1),
// and a fresh seed unless the request names one.
func sampling(req *request, sp *engine.Sampling) *apiError {
	sp.Temperature, sp.TopP, sp.TopK = 1, 1, 0
	if t := req.Temperature; t != nil {
		if *t < 0 || *t > 2 {
			return invalid("temperature", "temperature %v is outside [0, 2] (0 = greedy)", *t)
		}
		sp.Temperature = float32(*t)
	}
	if t := req.TopP; t != nil {
		if *t <= 0 || *t > 1 {
			return invalid("top_p", "top_p %v is outside (0, 1]", *t)
		}
		sp.TopP = float32(*t)
	}
	if k := req.TopK; k != nil {
		if *k < -1 {
			return invalid("top_k", "top_k %d: want -1 or 0 (off) or a positive count", *k)
		}
		sp.TopK = max(*k, 0)
	}
	sp.Seed = mrand.Uint64()
	if req.Seed != nil {
		sp.Seed = uint64(*req.Seed)
	}
	return nil
}

// generation collects one run's output from the engine's sink (on the
// run's goroutine) for the handler (on its own): the text not yet sent and
// the tokens counted. The engine ends the run at EOS, at the chat format's
// end-of-turn token and at a stop string, so its text is already cut.
type generation struct {
	notify chan struct{} // cap 1: text is pending

	mu      sync.Mutex
	pending strings.Builder
	tokens  int
}

func (g *generation) sink(ev engine.Event) {
	if ev.Kind != engine.EventTokens {
		return
	}
	g.mu.Lock()
	for _, t := range ev.Tokens {
		g.tokens++
		g.pending.WriteString(t.Text)
	}
	g.mu.Unlock()
	select {
	case g.notify <- struct{}{}:
	default:
	}
}

// take returns the pending text and clears it.
func (g *generation) take() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.pending.String()
	g.pending.Reset()
	return s
}

// outcome is how a run ended, for the response.
type outcome struct {
	stats  engine.Stats
	err    error
	finish string // stop | length | cancelled | error
	tokens int
	rest   string // text not taken before the end
}

// end settles the run: the text not yet taken and the finish reason.
func (g *generation) end(st engine.Stats, err error) outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	o := outcome{stats: st, tokens: g.tokens}
	switch {
	case err != nil:
		o.finish, o.err = "error", err
	case st.StopReason == "eos" || st.StopReason == "stop":
		o.finish = "stop"
	case st.StopReason == "max_tokens" || st.StopReason == "context":
		o.finish = "length"
	default:
		o.finish = st.StopReason
	}
	o.rest = g.pending.String()
	g.pending.Reset()
	return o
}

// generate answers a completions or chat request: validate, queue, run,
// respond (streamed or whole).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	received := time.Now()
	body, e := s.readBody(r, w)
	if e == nil {
		var p *plan
		if p, e = s.parse(body, chat); e == nil {
			s.run(w, r, p, received)
			return
		}
	}
	s.logf("%s %s %d %s", r.RemoteAddr, r.URL.Path, e.status, e.Message)
	s.refuse(w, e)
}

func (s *Server) run(w http.ResponseWriter, r *http.Request, p *plan, received time.Time) {
	rc := http.NewResponseController(w)
	// The body is read: the request's read deadline (ReadTimeout) is
	// lifted for the run, and each write gets its own deadline, so a run
	// may last as long as it generates.
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Time{})
	wait, err := s.q.enter(r.Context())
	if errors.Is(err, errBusy) {
		after := s.q.retryAfter()
		w.Header().Set("Retry-After", strconv.Itoa(after))
		e := &apiError{status: http.StatusTooManyRequests, Type: "rate_limit_error",
			Message: fmt.Sprintf("the server is busy: 1 request running and %d queued, the queue's limit (--queue); retry in about %d s", s.opts.QueueLen, after)}
		s.logf("%s %s 429 queue full", r.RemoteAddr, r.URL.Path)
		s.refuse(w, e.withCode("queue_full"))
		return
	}
	if err != nil {
		s.logf("%s %s client left while queued (%.1f ms)", r.RemoteAddr, r.URL.Path, ms(wait))
		return
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	g := &generation{notify: make(chan struct{}, 1)}
	done := make(chan outcome, 1)
	go func() {
		o := g.end(s.eng.Run(ctx, p.cfg, g.sink))
		s.q.leave(time.Since(start)) // the engine is free while the answer is written
		done <- o
	}()
	resp := newResponse(s, p, wait, received)
	var o outcome
	if p.stream {
		o = resp.stream(w, rc, g, done, cancel)
	} else {
		o = <-done
		resp.whole(w, rc, o)
	}
	s.logf("%s %s prompt=%d completion=%d finish=%s queue=%.1fms run=%.1fms", r.RemoteAddr, r.URL.Path,
		len(p.cfg.PromptIDs), o.tokens, o.finish, ms(wait), ms(time.Since(start)))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func newID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
