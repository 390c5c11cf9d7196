package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"rigscope/engine"
)

// request is the body of POST /v1/completions and /v1/chat/completions:
// OpenAI's fields, vLLM's extensions top_k and ignore_eos, and the fields
// clients send that change nothing here (accepted and ignored). Every other
// field is refused by name, as OpenAI refuses it, so a typo such as
// "max_token" is an error and not a silently ignored limit.
type request struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`   // completions: a string, [string] or [token ids]
	Messages []message       `json:"messages"` // chat

	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"` // chat's newer name for max_tokens
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"` // a string or up to 4 strings
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`

	// Known, not implemented: refused when set to anything but their
	// defaults (notImplemented).
	Logprobs         json.RawMessage `json:"logprobs"`
	TopLogprobs      json.RawMessage `json:"top_logprobs"`
	Echo             bool            `json:"echo"`
	Suffix           *string         `json:"suffix"`
	BestOf           *int            `json:"best_of"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	LogitBias        map[string]any  `json:"logit_bias"`
	Tools            json.RawMessage `json:"tools"`
	ToolChoice       json.RawMessage `json:"tool_choice"`
	ResponseFormat   *struct {
		Type string `json:"type"`
	} `json:"response_format"`

	// Accepted and ignored: they change nothing about the generation.
	User              string          `json:"user"`
	Metadata          json.RawMessage `json:"metadata"`
	Store             bool            `json:"store"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	ServiceTier       string          `json:"service_tier"`
}

// message is one chat turn; content is a string or text parts.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
}

// apiError is an error as OpenAI's API returns it, with its HTTP status.
type apiError struct {
	status  int
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

func invalid(param, format string, args ...any) *apiError {
	e := &apiError{status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	return e
}

func (e *apiError) withCode(code string) *apiError { e.Code = &code; return e }

// decodeRequest parses body, refusing invalid UTF-8, malformed JSON and
// unknown fields, each by name.
func decodeRequest(body []byte) (*request, *apiError) {
	if !utf8.Valid(body) {
		i := 0
		for i < len(body) {
			r, n := utf8.DecodeRune(body[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, invalid("", "the request body is not valid UTF-8 (first bad byte 0x%02x at offset %d); send JSON encoded as UTF-8", body[i], i)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name = strings.Trim(name, `"`)
			return nil, invalid(name, "Unrecognized request argument supplied: %s", name)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, invalid(te.Field, "%s must be a JSON %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return nil, invalid("", "the request body is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, invalid("", "the request body has data after its JSON object; send one object")
	}
	return &req, nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "float64":
		return "number"
	case "slice":
		return "array"
	case "map", "struct":
		return "object"
	}
	return goKind
}

// notImplemented names the first field req sets that rigscope does not
// implement, so the client is told rather than answered as if it were.
func (req *request) notImplemented() *apiError {
	set := func(raw json.RawMessage) bool {
		s := strings.TrimSpace(string(raw))
		return s != "" && s != "null" && s != "false" && s != "0" && s != "[]"
	}
	refuse := func(field string) *apiError {
		return invalid(field, "%s is not supported by this server (rigscope); leave it out", field)
	}
	switch {
	case set(req.Logprobs):
		return refuse("logprobs")
	case set(req.TopLogprobs):
		return refuse("top_logprobs")
	case req.Echo:
		return refuse("echo")
	case req.Suffix != nil && *req.Suffix != "":
		return refuse("suffix")
	case req.BestOf != nil && *req.BestOf != 1:
		return refuse("best_of")
	case req.PresencePenalty != nil && *req.PresencePenalty != 0:
		return refuse("presence_penalty")
	case req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0:
		return refuse("frequency_penalty")
	case len(req.LogitBias) > 0:
		return refuse("logit_bias")
	case set(req.Tools):
		return refuse("tools")
	case set(req.ToolChoice) && strings.TrimSpace(string(req.ToolChoice)) != `"none"`:
		return refuse("tool_choice")
	case req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text":
		return refuse("response_format")
	case req.N != nil && *req.N != 1:
		return invalid("n", "n = %d: this server makes one choice per request; send n = 1 or leave it out", *req.N)
	}
	return nil
}

// stops parses stop: absent, one string, or up to 4 non-empty strings.
func (req *request) stops() ([]string, *apiError) {
	raw := strings.TrimSpace(string(req.Stop))
	if raw == "" || raw == "null" {
		return nil, nil
	}
	var list []string
	var one string
	if err := json.Unmarshal(req.Stop, &one); err == nil {
		list = []string{one}
	} else if err := json.Unmarshal(req.Stop, &list); err != nil {
		return nil, invalid("stop", "stop must be a string or an array of up to %d strings", engine.MaxStops)
	}
	if len(list) > engine.MaxStops {
		return nil, invalid("stop", "stop has %d strings; at most %d are allowed", len(list), engine.MaxStops)
	}
	for i, s := range list {
		if s == "" {
			return nil, invalid("stop", "stop[%d] is empty; a stop string has at least one character", i)
		}
	}
	return list, nil
}

// completionPrompt is the completions prompt: text, or token ids.
func (req *request) completionPrompt() (text string, ids []int32, e *apiError) {
	raw := strings.TrimSpace(string(req.Prompt))
	if raw == "" || raw == "null" {
		return "", nil, invalid("prompt", "prompt is missing: send the text to complete")
	}
	if json.Unmarshal(req.Prompt, &text) == nil {
		return text, nil, nil
	}
	var texts []string
	if json.Unmarshal(req.Prompt, &texts) == nil {
		if len(texts) != 1 {
			return "", nil, invalid("prompt", "prompt has %d strings; this server completes one prompt per request", len(texts))
		}
		return texts[0], nil, nil
	}
	if json.Unmarshal(req.Prompt, &ids) == nil && len(ids) > 0 {
		return "", ids, nil
	}
	return "", nil, invalid("prompt", "prompt must be a string, an array of one string, or an array of token ids")
}

// text is a message's content: a string, or an array of text parts.
func (m message) text(i int) (string, *apiError) {
	param := fmt.Sprintf("messages[%d].content", i)
	raw := strings.TrimSpace(string(m.Content))
	if raw == "" || raw == "null" {
		if m.Role == "assistant" {
			return "", nil
		}
		return "", invalid(param, "%s is missing", param)
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", invalid(param, "%s must be a string or an array of text parts", param)
	}
	var sb strings.Builder
	for j, p := range parts {
		if p.Type != "text" {
			return "", invalid(fmt.Sprintf("%s[%d].type", param, j), "%s[%d] is a %q part; this server takes text parts only", param, j, p.Type)
		}
		sb.WriteString(p.Text)
	}
	return sb.String(), nil
}
