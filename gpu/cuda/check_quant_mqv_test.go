//go:build cuda

package cuda

import (
	"flag"
	"fmt"
	"strings"
)

// The quant bandwidth table's one-token variants (-bwmqv): each shape's T=1
// product timed under RIGSCOPE_CUDA_MQV settings against the base, in one
// process on the same weights.

var checkBWMQV = flag.String("bwmqv", "", "the quant bandwidth table's T=1 products also under these RIGSCOPE_CUDA_MQV settings (separated by ';'), alternating with the base")

// bwMQVSets parses -bwmqv: RIGSCOPE_CUDA_MQV values separated by ';'.
func bwMQVSets() ([]mqvKnob, error) {
	var sets []mqvKnob
	for _, v := range strings.Split(*checkBWMQV, ";") {
		if strings.TrimSpace(v) == "" {
			continue
		}
		k, err := parseMQV(v, true)
		if err != nil {
			return nil, fmt.Errorf("-bwmqv: %w", err)
		}
		sets = append(sets, k)
	}
	return sets, nil
}

// bwMQV times a shape's T=1 product (op on mats) under the base setting
// (tgt's) and each of sets that changes its kernels or K split, in two
// rounds alternating them, plainly and with programmatic dependent launch;
// it records the means as us keys label/shape/1/mqvI[pdl] (I 0: base, i+1:
// sets[i], the base's where sets[i] changes nothing) and appends a row per
// setting timed to rows.
func bwMQV(tgt *Target, mats []dweight, sh q8bShape, label string, sets []mqvKnob, us map[string]float64,
	timed func(n int, op func(i int) error) (float64, error), op func(i int) error, rows []string) ([]string, error) {
	base := tgt.tune.MQV
	defer func() { tgt.tune.MQV = base }()
	prefix := []string{"mq", "mqn", "mqg"}[sh.kind]
	plan := func() string { // the kernels, grids and K splits the product launches
		parts := mats[0].parts
		if len(parts) == 0 {
			parts = []dweight{mats[0]}
		}
		var b strings.Builder
		for _, p := range parts {
			ks := tgt.mqSplit(p.rows, p.dt)
			name, grid, _, err := tgt.mqKernel(prefix, p.dt, p.rows, p.cols, 1, ks)
			fmt.Fprintf(&b, "%s/%d/ks%d", name, grid[0], ks)
			if err != nil {
				fmt.Fprintf(&b, " (%v)", err)
			}
			b.WriteString(" ")
		}
		return b.String()
	}
	type res struct {
		set        int // 0 base, i+1 sets[i]
		plain, pdl [2]float64
	}
	bp := plan()
	rs := []*res{{set: 0}}
	for i, k := range sets {
		tgt.tune.MQV = k
		if plan() != bp {
			rs = append(rs, &res{set: i + 1})
		}
	}
	n := max(20, 2*len(mats))
	for round := 0; round < 2; round++ {
		for _, r := range rs {
			tgt.tune.MQV = base
			if r.set > 0 {
				tgt.tune.MQV = sets[r.set-1]
			}
			var err error
			if r.plain[round], err = timed(n, op); err != nil {
				return rows, fmt.Errorf("MQV %s: %w", tgt.tune.MQV, err)
			}
			tgt.pdl = tgt.dev.Major >= 9
			r.pdl[round], err = timed(n, op)
			tgt.pdl = false
			if err != nil {
				return rows, fmt.Errorf("MQV %s pdl: %w", tgt.tune.MQV, err)
			}
		}
	}
	key := fmt.Sprintf("%s/%s/1/mqv", label, sh.name)
	for i := 0; i <= len(sets); i++ {
		r := rs[0]
		for _, q := range rs {
			if q.set == i {
				r = q
			}
		}
		us[fmt.Sprintf("%s%d", key, i)] = (r.plain[0] + r.plain[1]) / 2
		us[fmt.Sprintf("%s%dpdl", key, i)] = (r.pdl[0] + r.pdl[1]) / 2
	}
	for _, r := range rs {
		name := "base=" + base.String()
		tgt.tune.MQV = base
		if r.set > 0 {
			name = sets[r.set-1].String()
			tgt.tune.MQV = sets[r.set-1]
		}
		rows = append(rows, fmt.Sprintf("%-6s %-22s | %-22s | %7.1f %7.1f | %7.1f %7.1f | %s", label, sh.name, name,
			r.plain[0], r.plain[1], r.pdl[0], r.pdl[1], strings.TrimSpace(plan())))
	}
	return rows, nil
}
