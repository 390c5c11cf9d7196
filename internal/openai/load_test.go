package openai

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLoad: 200 requests from 8 concurrent clients on synthetic:tiny,
// mixing endpoints and streaming. Every request is answered once and
// well-formed (its own id, usage that adds up, a finish reason), none is
// refused (8 clients fit the queue), and the heap after the run is within
// a bound of the heap before it. It prints the latency and queue-wait
// quantiles and the heap.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test; run without -short")
	}
	const requests, clients, maxTokens = 200, 8, 8
	_, _, url, log := openTiny(t, 16)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	type result struct {
		id, finish         string
		latency, queueWait time.Duration
		prompt, completion int
	}
	work := make(chan int)
	results := make(chan result, requests)
	errs := make(chan error, requests)
	heapBefore := heap()
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range work {
				r, err := loadRequest(url, i, maxTokens)
				if err != nil {
					errs <- fmt.Errorf("request %d: %w", i, err)
					continue
				}
				results <- r
			}
		})
	}
	for i := range requests {
		work <- i
	}
	close(work)
	wg.Wait()
	wall := time.Since(start)
	close(results)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var lat, wait []time.Duration
	ids := map[string]bool{}
	for r := range results {
		if ids[r.id] {
			t.Errorf("response id %s answered twice", r.id)
		}
		ids[r.id] = true
		lat, wait = append(lat, r.latency), append(wait, r.queueWait)
	}
	if len(ids) != requests {
		t.Fatalf("%d distinct responses for %d requests", len(ids), requests)
	}
	if runs := strings.Count(log.String(), " finish="); runs != requests {
		t.Errorf("the server logged %d runs for %d requests", runs, requests)
	}
	heapAfter := heap()
	q := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return ms(d[min(len(d)-1, int(p*float64(len(d))))])
	}
	t.Logf("load: %d requests, %d clients, %d tokens each, %.2f s wall, %.1f req/s", requests, clients, maxTokens, wall.Seconds(), requests/wall.Seconds())
	t.Logf("%-14s %9s %9s %9s", "ms", "p50", "p99", "max")
	t.Logf("%-14s %9.1f %9.1f %9.1f", "latency", q(lat, 0.5), q(lat, 0.99), q(lat, 1))
	t.Logf("%-14s %9.1f %9.1f %9.1f", "queue wait", q(wait, 0.5), q(wait, 0.99), q(wait, 1))
	t.Logf("heap after GC: %.1f MiB before, %.1f MiB after", float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20))
	if heapAfter > heapBefore+32<<20 {
		t.Errorf("the heap grew from %d to %d bytes over the run", heapBefore, heapAfter)
	}
}

// loadRequest sends request i: chat or completions, streamed or not, by i.
func loadRequest(url string, i, maxTokens int) (r struct {
	id, finish         string
	latency, queueWait time.Duration
	prompt, completion int
}, err error) {
	chat, stream := i%2 == 0, i%3 == 0
	path, prompt := "/v1/completions", fmt.Sprintf(`"prompt":"request %d"`, i)
	if chat {
		path, prompt = "/v1/chat/completions", fmt.Sprintf(`"messages":[{"role":"user","content":"request %d"}]`, i)
	}
	body := fmt.Sprintf(`{%s,"max_tokens":%d,"temperature":0.8,"seed":%d,"stream":%v,"stream_options":null}`, prompt, maxTokens, i, stream)
	if stream {
		body = strings.Replace(body, `"stream_options":null`, `"stream_options":{"include_usage":true}`, 1)
	}
	start := time.Now()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	r.latency = time.Since(start)
	if err != nil || resp.StatusCode != 200 {
		return r, fmt.Errorf("%d %s %v", resp.StatusCode, b, err)
	}
	var v map[string]any
	if stream {
		if v, err = lastChunks(string(b)); err != nil {
			return r, err
		}
	} else if err = jsonUnmarshal(b, &v); err != nil {
		return r, err
	}
	r.id, _ = v["id"].(string)
	r.finish, _ = v["finish_reason"].(string)
	u, _ := v["usage"].(map[string]any)
	meta, _ := v["meta_info"].(map[string]any)
	if r.id == "" || u == nil || meta == nil || (r.finish != "stop" && r.finish != "length") {
		return r, fmt.Errorf("malformed response %s", b)
	}
	p, c, tot := u["prompt_tokens"].(float64), u["completion_tokens"].(float64), u["total_tokens"].(float64)
	if p < 1 || c < 1 || c > float64(maxTokens) || tot != p+c || (r.finish == "length") != (c == float64(maxTokens)) {
		return r, fmt.Errorf("usage %v with finish %s, max_tokens %d", u, r.finish, maxTokens)
	}
	r.queueWait = time.Duration(meta["queue_time"].(float64) * float64(time.Second))
	return r, nil
}

func jsonUnmarshal(b []byte, v *map[string]any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	ch, _ := (*v)["choices"].([]any)
	if len(ch) != 1 {
		return fmt.Errorf("choices %v: want one", (*v)["choices"])
	}
	(*v)["finish_reason"] = ch[0].(map[string]any)["finish_reason"]
	return nil
}

// lastChunks folds a stream into one object: its id, the finish reason,
// the meta_info of the finishing chunk and the usage of the last; every
// chunk must share the id, and the stream must end with [DONE].
func lastChunks(body string) (map[string]any, error) {
	out := map[string]any{}
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	if len(events) < 3 || events[len(events)-1] != "data: [DONE]" {
		return nil, fmt.Errorf("stream %q does not end with [DONE]", body)
	}
	for _, ev := range events[:len(events)-1] {
		var c map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			return nil, fmt.Errorf("event %q: %v", ev, err)
		}
		if id, ok := out["id"]; ok && id != c["id"] {
			return nil, fmt.Errorf("chunk ids %v and %v in one stream", id, c["id"])
		}
		out["id"] = c["id"]
		for _, k := range []string{"usage", "meta_info"} {
			if x, ok := c[k]; ok {
				out[k] = x
			}
		}
		for _, ch := range c["choices"].([]any) {
			if fr, ok := ch.(map[string]any)["finish_reason"].(string); ok {
				out["finish_reason"] = fr
			}
		}
	}
	return out, nil
}
