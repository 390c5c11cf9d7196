package cuda

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fakeNCCL makes numbered communicators and records what it made and
// destroyed; refuse makes create fail with NCCL's kind of message.
type fakeNCCL struct {
	next      uintptr
	made      [][]uintptr
	destroyed [][]uintptr
	refuse    string // a setting String() that NCCL refuses
	short     bool   // make one communicator too few
}

func (f *fakeNCCL) create(gpus []int, s NCCLSettings) ([]uintptr, error) {
	if f.refuse != "" && s.String() == f.refuse {
		return nil, errors.New("ncclInvalidUsage: Error : no algorithm/protocol available for function AllReduce with datatype ncclFloat32. NCCL_ALGO was set to CollNetDirect.")
	}
	n := len(gpus)
	if f.short {
		n--
	}
	c := make([]uintptr, n)
	for i := range c {
		f.next++
		c[i] = f.next
	}
	f.made = append(f.made, c)
	return c, nil
}

func (f *fakeNCCL) destroy(c []uintptr) { f.destroyed = append(f.destroyed, c) }

// TestNCCLCommsEnsure: communicators are made when nccl is first chosen,
// reused while the GPUs and settings stay, made again (the old ones
// destroyed after the new exist) when either changes; a refused setting
// leaves the previous ones in place.
func TestNCCLCommsEnsure(t *testing.T) {
	ll := NCCLSettings{Proto: "LL"}
	tree := NCCLSettings{Algo: "Tree", MaxChannels: 4}
	collnet := NCCLSettings{Algo: "CollNetDirect"}
	steps := []struct {
		gpus      []int
		s         NCCLSettings
		created   bool
		bad       string // "" = accepted
		made      int    // communicator sets made so far
		destroyed int    // sets destroyed so far
	}{
		{[]int{0, 1}, NCCLSettings{}, true, "", 1, 0},
		{[]int{0, 1}, NCCLSettings{}, false, "", 1, 0}, // the same run again: reused
		{[]int{0, 1}, ll, true, "", 2, 1},              // protocol changed
		{[]int{0, 1}, ll, false, "", 2, 1},
		{[]int{0, 1}, tree, true, "", 3, 2},                                       // algorithm and channels changed
		{[]int{0, 1}, collnet, false, "NCCL_ALGO was set to CollNetDirect", 3, 2}, // refused: tree's stay
		{[]int{0, 1}, tree, false, "", 3, 2},                                      // back to tree: still there
		{[]int{2, 3}, tree, true, "", 4, 3},                                       // other GPUs
		{[]int{2, 3, 4, 5}, tree, true, "", 5, 4},                                 // more ranks
	}
	f := &fakeNCCL{refuse: collnet.String()}
	var c ncclComms
	for i, st := range steps {
		created, err := c.ensure(f, st.gpus, st.s)
		call := fmt.Sprintf("step %d: ensure(GPUs %v, %s)", i, st.gpus, st.s)
		switch {
		case st.bad == "" && err != nil:
			t.Fatalf("%s: %v", call, err)
		case st.bad != "" && (err == nil || !strings.Contains(err.Error(), st.bad) || !strings.Contains(err.Error(), st.s.String())):
			t.Fatalf("%s = %v, want an error naming %s and holding NCCL's %q", call, err, st.s, st.bad)
		}
		if created != st.created || len(f.made) != st.made || len(f.destroyed) != st.destroyed {
			t.Fatalf("%s: created %v, %d sets made, %d destroyed; want %v, %d, %d", call, created, len(f.made), len(f.destroyed), st.created, st.made, st.destroyed)
		}
		if st.bad == "" && !slices.Equal(c.comms, f.made[len(f.made)-1]) {
			t.Fatalf("%s: in use %v, want the last made %v", call, c.comms, f.made[len(f.made)-1])
		}
		if len(f.destroyed) > 0 && len(f.made) > 1 && !slices.Equal(f.destroyed[len(f.destroyed)-1], f.made[len(f.destroyed)-1]) {
			t.Fatalf("%s: destroyed %v, want the previous set %v", call, f.destroyed[len(f.destroyed)-1], f.made[len(f.destroyed)-1])
		}
	}
	c.close(f)
	if len(f.destroyed) != len(f.made) || c.comms != nil {
		t.Errorf("after close: %d of %d sets destroyed, comms %v", len(f.destroyed), len(f.made), c.comms)
	}
	c.close(f) // closing twice destroys nothing more
	if len(f.destroyed) != len(f.made) {
		t.Errorf("a second close destroyed again: %d of %d", len(f.destroyed), len(f.made))
	}

	short := &fakeNCCL{short: true}
	var d ncclComms
	if _, err := d.ensure(short, []int{0, 1}, NCCLSettings{}); err == nil || len(short.destroyed) != 1 || d.comms != nil {
		t.Errorf("a maker that returns too few communicators: err %v, destroyed %d, in use %v", err, len(short.destroyed), d.comms)
	}
}

func TestNCCLProcessAdmit(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		made   bool
		buff   int64 // NCCL_BUFFSIZE the process has (made)
		env    func(string) string
		s      NCCLSettings
		want   int64  // buffer size in effect
		setEnv string // NCCL_BUFFSIZE to set while making
		bad    string
	}{
		{false, 0, env(), NCCLSettings{}, 0, "", ""},
		{false, 0, env(), NCCLSettings{BuffSize: 8 << 20}, 8 << 20, "8388608", ""},
		{false, 0, env("NCCL_BUFFSIZE", "2097152"), NCCLSettings{}, 2 << 20, "", ""},
		{false, 0, env("NCCL_BUFFSIZE", "2097152"), NCCLSettings{BuffSize: 1 << 20}, 1 << 20, "1048576", ""}, // not read yet: the run's wins
		{false, 0, env("NCCL_BUFFSIZE", "2M"), NCCLSettings{}, 0, "", "whole number of bytes"},
		{true, 8 << 20, env(), NCCLSettings{BuffSize: 8 << 20}, 8 << 20, "", ""},
		{true, 8 << 20, env(), NCCLSettings{}, 8 << 20, "", ""},
		{true, 8 << 20, env(), NCCLSettings{BuffSize: 1 << 20}, 0, "", "NCCL reads it once per process"},
		{true, 0, env(), NCCLSettings{BuffSize: 1 << 20}, 0, "", "have NCCL's default (4M); restart rigscope to use 1M"},
		{false, 0, env("NCCL_MAX_NCHANNELS", "8"), NCCLSettings{MaxChannels: 4}, 0, "", "NCCL_MAX_NCHANNELS=8 in rigscope's environment"},
		{false, 0, env("NCCL_MIN_CTAS", "2", "NCCL_MAX_CTAS", "4"), NCCLSettings{MinChannels: 1}, 0, "", "NCCL_MIN_CTAS=2, NCCL_MAX_CTAS=4"},
		{false, 0, env("NCCL_MAX_NCHANNELS", "8"), NCCLSettings{Proto: "LL"}, 0, "", ""}, // channels left to the process: no conflict
		{false, 0, env(), NCCLSettings{Proto: "LL9"}, 0, "", "not one NCCL knows"},
	} {
		p := &ncclProcess{made: tc.made, buff: tc.buff}
		got, setEnv, err := p.admit(tc.s, tc.env)
		call := fmt.Sprintf("admit(%s) with made %v buff %d", tc.s, tc.made, tc.buff)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%s: %v", call, err)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s = %v, want an error holding %q", call, err, tc.bad)
		case tc.bad == "" && (got != tc.want || setEnv != tc.setEnv):
			t.Errorf("%s = %d, %q; want %d, %q", call, got, setEnv, tc.want, tc.setEnv)
		}
	}
	var p ncclProcess
	p.madeWith(4 << 20)
	p.madeWith(1 << 20) // NCCL read it once: the first stays
	if _, _, err := p.admit(NCCLSettings{BuffSize: 1 << 20}, func(string) string { return "" }); err == nil {
		t.Error("after communicators with 4M, a run asking 1M was admitted")
	}
}

func TestNCCLConfigCTAs(t *testing.T) {
	for _, tc := range []struct {
		s        NCCLSettings
		min, max int
	}{
		{NCCLSettings{}, 0, 0}, {NCCLSettings{MinChannels: 2}, 2, 64}, {NCCLSettings{MaxChannels: 8}, 0, 8}, {NCCLSettings{MinChannels: 2, MaxChannels: 8}, 2, 8},
	} {
		if lo, hi := ncclConfigCTAs(tc.s); lo != tc.min || hi != tc.max {
			t.Errorf("ncclConfigCTAs(%s) = %d, %d; want %d, %d", tc.s, lo, hi, tc.min, tc.max)
		}
	}
}
