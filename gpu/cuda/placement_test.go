package cuda

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckStepBackend(t *testing.T) {
	shared := func(r int) rankPlacement { return rankPlacement{gpus: make([]int, r)} }
	peers := rankPlacement{gpus: []int{0, 1}}
	noPeer := rankPlacement{gpus: []int{0, 1, 2, 3}, peer: "GPU 0 -> GPU 2: cuCtxEnablePeerAccess: peer access unsupported"}
	for _, tc := range []struct {
		p       rankPlacement
		backend string
		want    string // "" = accepted; else a word the message must hold
	}{
		{shared(1), "nccl", ""}, {shared(2), "oneshot", ""}, {shared(2), "twoshot", ""}, {shared(4), "host", ""}, {shared(4), "auto", ""}, {shared(8), "", ""},
		{shared(2), "nccl", "duplicate GPU"}, {shared(2), "ring", "CPU backend"}, {shared(4), "compressed", "CPU backend"},
		{shared(2), "bogus", "unknown allreduce backend"},
		{peers, "oneshot", ""}, {peers, "twoshot", ""}, {peers, "host", ""}, {peers, "auto", ""},
		{peers, "nccl", ""}, {noPeer, "nccl", ""},
		{noPeer, "host", ""},
		{noPeer, "oneshot", "GPU 0 -> GPU 2: cuCtxEnablePeerAccess"}, {noPeer, "twoshot", "self-test between GPUs 0,1,2,3 failed"},
		{noPeer, "", "allreduce auto unavailable"}, {noPeer, "auto", "use host"},
		{rankPlacement{gpus: []int{3, 3}, peer: ""}, "oneshot", ""},
	} {
		err := checkStepBackend(tc.p, tc.backend)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkStepBackend(%+v, %q) = %v, want accepted", tc.p, tc.backend, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkStepBackend(%+v, %q) = %v, want an error saying %q", tc.p, tc.backend, err, tc.want)
		}
	}
}

func TestPlaceRanks(t *testing.T) {
	for _, tc := range []struct {
		tp, visible int
		gpus        []int
		want        []int
		err         string
	}{
		{1, 1, nil, []int{0}, ""},
		{4, 1, nil, []int{0, 0, 0, 0}, ""},               // fewer GPUs than ranks: they share GPU 0
		{4, 8, nil, []int{0, 1, 2, 3}, ""},               // enough GPUs: rank i on GPU i
		{2, 8, []int{3}, []int{3, 3}, ""},                // one GPU named: the ranks share it
		{4, 8, []int{0, 2, 4, 6}, []int{0, 2, 4, 6}, ""}, // one GPU per rank, as listed
		{2, 8, []int{5, 1}, []int{5, 1}, ""},
		{2, 1, []int{1}, nil, "has 1 GPU(s)"},
		{2, 8, []int{-1}, nil, "numbered 0 to 7"},
		{2, 8, []int{2, 2}, nil, "twice"},
		{4, 2, []int{0, 1, 2, 3}, nil, "has 2 GPU(s)"}, // more GPUs named than visible
		{2, 8, []int{0, 1, 2}, nil, "lists 3 GPUs for 2"},
		{2, 0, nil, nil, "no CUDA device"},
	} {
		got, err := placeRanks(tc.tp, tc.gpus, tc.visible)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("placeRanks(%d, %v, %d) = %d, %v; want %d", tc.tp, tc.gpus, tc.visible, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("placeRanks(%d, %v, %d) = %v; want an error saying %q", tc.tp, tc.gpus, tc.visible, err, tc.err)
		}
	}
}

// callBytes counts, over all ranks of one call, as much sent as received
// (every byte one rank reads another rank wrote) for the peer backends.
func TestCallBytesBalance(t *testing.T) {
	for _, b := range []string{"oneshot", "twoshot", "nccl"} {
		for _, R := range []int{2, 3, 4, 8} {
			for _, n := range []int{1, 7, 4096, 65536} {
				var s, r int64
				for k := range R {
					a, c := callBytes(b, k, R, n)
					s, r = s+a, r+c
				}
				if s != r || s <= 0 {
					t.Errorf("%s R=%d n=%d: sent %d recv %d", b, R, n, s, r)
				}
			}
		}
	}
	if s, r := callBytes("host", 1, 4, 100); s != 400 || r != 1600 {
		t.Errorf("host: sent %d recv %d, want 400 and 1600", s, r)
	}
}
