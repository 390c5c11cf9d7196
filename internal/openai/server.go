// Package openai serves an engine over the OpenAI HTTP API, as vLLM,
// SGLang and llama-server do: GET /v1/models, POST /v1/completions and
// POST /v1/chat/completions (streamed as server-sent events on request),
// OpenAI's error shape, an optional bearer key, a bounded queue in front of
// the engine (one run at a time), and /metrics beside them.
package openai

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"rigscope/engine"
	"rigscope/engine/metrics/promserve"
	"rigscope/engine/tokenizer"
)

// Engine runs one generation at a time; *engine.Engine is one.
type Engine interface {
	Run(ctx context.Context, cfg engine.RunConfig, sink func(engine.Event)) (engine.Stats, error)
}

// Defaults for Options' zero values.
const (
	DefaultQueueLen     = 16
	DefaultMaxBodyBytes = 8 << 20
)

// Options describe the served model and bound the server.
type Options struct {
	Model        string              // the served name; requests may name it or leave model out
	CtxLen       int                 // KV positions: prompt plus completion tokens
	Tokenizer    tokenizer.Tokenizer // required: prompts are text
	ChatTemplate string              // tokenizer.ApplyTemplate's name; "" with no OwnTemplate refuses chat
	// OwnTemplate is the model's own Jinja template, preferred to
	// ChatTemplate when its Source is set.
	OwnTemplate tokenizer.JinjaTemplate
	// Base is every request's drafter, TP size and allreduce backend;
	// the request sets the prompt, the length and the sampling.
	Base engine.RunConfig
	// APIKey, when set, is required as "Authorization: Bearer KEY" on /v1/.
	APIKey string
	// QueueLen requests wait while one runs; more are refused with 429.
	QueueLen     int
	MaxBodyBytes int64
	// WriteTimeout bounds each write to a client (every streamed chunk
	// gets its own), not the whole response.
	WriteTimeout time.Duration
	Metrics      http.Handler // served at /metrics when set
	Log          io.Writer    // one line per generation request; nil logs nothing
}

// Server is the API's http.Handler.
type Server struct {
	eng     Engine
	opts    Options
	q       *queue
	created int64

	logMu sync.Mutex
}

// New checks opts and makes the handler.
func New(eng Engine, opts Options) (*Server, error) {
	if opts.Tokenizer == nil {
		return nil, fmt.Errorf("model %s has no tokenizer: the API takes text prompts", opts.Model)
	}
	if opts.CtxLen < 2 {
		return nil, fmt.Errorf("model %s: a context of %d positions leaves no room for a completion", opts.Model, opts.CtxLen)
	}
	if opts.QueueLen < 0 {
		return nil, fmt.Errorf("queue length %d: want 0 or more requests waiting", opts.QueueLen)
	}
	if opts.QueueLen == 0 {
		opts.QueueLen = DefaultQueueLen
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultLimits.WriteTimeout
	}
	if opts.ChatTemplate != "" {
		if _, err := tokenizer.ApplyTemplate(opts.ChatTemplate, nil, true); err != nil {
			return nil, err
		}
	}
	return &Server{eng: eng, opts: opts, q: newQueue(opts.QueueLen),
		created: time.Now().Unix()}, nil
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/metrics" && s.opts.Metrics != nil:
		promserve.Handler(s.opts.Metrics).ServeHTTP(w, r)
	case r.URL.Path == "/health":
		s.only(w, r, http.MethodGet, func() { w.WriteHeader(http.StatusOK) })
	case !strings.HasPrefix(r.URL.Path, "/v1/"):
		s.refuse(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("no such path %s: the API is under /v1/ (models, completions, chat/completions)", r.URL.Path)})
	case !s.authorized(r):
		s.refuse(w, s.authError(r))
	case r.URL.Path == "/v1/models":
		s.only(w, r, http.MethodGet, func() { s.models(w) })
	case r.URL.Path == "/v1/completions":
		s.only(w, r, http.MethodPost, func() { s.generate(w, r, false) })
	case r.URL.Path == "/v1/chat/completions":
		s.only(w, r, http.MethodPost, func() { s.generate(w, r, true) })
	default:
		s.refuse(w, &apiError{status: http.StatusNotFound, Type: "invalid_request_error",
			Message: fmt.Sprintf("no such endpoint %s %s: this server has GET /v1/models, POST /v1/completions and POST /v1/chat/completions", r.Method, r.URL.Path)})
	}
}

// only runs serve for the one method the path answers, 405 otherwise.
func (s *Server) only(w http.ResponseWriter, r *http.Request, method string, serve func()) {
	if r.Method != method {
		w.Header().Set("Allow", method)
		s.refuse(w, &apiError{status: http.StatusMethodNotAllowed, Type: "invalid_request_error",
			Message: fmt.Sprintf("%s %s: this endpoint answers %s", r.Method, r.URL.Path, method)})
		return
	}
	serve()
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.APIKey == "" {
		return true
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(key), []byte(s.opts.APIKey)) == 1
}

func (s *Server) authError(r *http.Request) *apiError {
	e := &apiError{status: http.StatusUnauthorized, Type: "invalid_request_error"}
	if r.Header.Get("Authorization") == "" {
		e.Message = "You didn't provide an API key: send it as the header Authorization: Bearer KEY (the key the server was started with, --api-key)."
	} else {
		e.Message = "Incorrect API key provided: the Authorization header is not Bearer with the server's --api-key."
	}
	return e.withCode("invalid_api_key")
}

func (s *Server) models(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{
		"id": s.opts.Model, "object": "model", "created": s.created, "owned_by": "rigscope", "max_model_len": s.opts.CtxLen,
	}}})
}

// refuse writes e in OpenAI's shape. A refusal that leaves a request body
// unread also closes the connection, without reading the rest of it.
func (s *Server) refuse(w http.ResponseWriter, e *apiError) {
	if e.status == http.StatusRequestEntityTooLarge {
		w.Header().Set("Connection", "close")
		defer http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	writeJSON(w, e.status, map[string]*apiError{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil { // every value written here marshals; say so if one does not
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// readBody reads at most MaxBodyBytes, refusing a larger declared length
// before reading any of it.
func (s *Server) readBody(r *http.Request, w http.ResponseWriter) ([]byte, *apiError) {
	tooLarge := func(n string) *apiError {
		return (&apiError{status: http.StatusRequestEntityTooLarge, Type: "invalid_request_error",
			Message: fmt.Sprintf("the request body is %s; this server takes at most %d bytes", n, s.opts.MaxBodyBytes)}).withCode("request_too_large")
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		return nil, tooLarge(fmt.Sprintf("%d bytes", r.ContentLength))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return nil, tooLarge("larger than that")
	case err != nil:
		return nil, invalid("", "reading the request body: %v", err)
	}
	return body, nil
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opts.Log, format+"\n", args...)
}
