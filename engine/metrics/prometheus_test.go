package metrics

import (
	"bufio"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestWritePrometheus(t *testing.T) {
	s := Snapshot{
		K: 4, Generated: 40, TokensPerS: 123.5,
		AcceptHist:    []int{1, 2, 0, 0, 3}, // 6 drafts, 0+2+12 = 14 accepted
		AcceptPerPos:  []float64{0.8, 0.5, 0.5, 0.5},
		MeanAcceptLen: 1 + 14.0/6,
		DraftTokens:   22,
		AllReduce:     []LatencySummary{{Backend: "ring", Bytes: 4096, Count: 10, P50: 20 * time.Microsecond, P99: 50 * time.Microsecond, Mean: 25 * time.Microsecond}},
		RankBytesSent: []int64{100, 200},
		RankBytesRecv: []int64{300, 400},
	}
	var b strings.Builder
	if err := WritePrometheus(&b, s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"rigscope:spec_decode_num_drafts_total":                                           "6",
		"rigscope:spec_decode_num_draft_tokens_total":                                     "22",
		"rigscope:spec_decode_num_accepted_tokens_total":                                  "14",
		`rigscope:spec_decode_num_accepted_tokens_per_pos{position="0"}`:                  "0.8",
		`rigscope:allreduce_latency_seconds{backend="ring",bytes="4096",quantile="0.99"}`: "5e-05",
		`rigscope:allreduce_latency_seconds_count{backend="ring",bytes="4096"}`:           "10",
		`rigscope:interconnect_bytes_received_total{rank="1"}`:                            "400",
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("malformed line %q", line)
		}
		got[line[:i]] = line[i+1:]
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("WritePrometheus: %s = %q, want %q", k, got[k], v)
		}
	}
}

func TestPrometheusHandler(t *testing.T) {
	rec := httptest.NewRecorder()
	PrometheusHandler(func() Snapshot { return Snapshot{Generated: 7} }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "rigscope:generation_tokens_total 7") {
		t.Errorf("GET /metrics = %d %q", rec.Code, rec.Body.String())
	}
}
