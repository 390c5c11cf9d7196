package openai

import "testing"

// FuzzDecodeRequest: any body is a request or a 400 with a message; never
// a panic.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"prompt":"a","stop":["x"],"max_tokens":3}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`))
	f.Add([]byte("{\"prompt\":\"\xff\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, e := decodeRequest(body)
		if e != nil {
			if e.status != 400 || e.Message == "" {
				t.Errorf("%q: error %+v", body, e)
			}
			return
		}
		req.notImplemented()
		req.stops()
		req.completionPrompt()
		for i, m := range req.Messages {
			m.text(i)
		}
	})
}
