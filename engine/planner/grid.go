package planner

// Grid is the configurations to predict: every TP size x backend (one
// row at TP 1, where no allreduce runs) x drafter x k.
type Grid struct {
	Device   string
	TP       []int
	Backends []string
	// Drafters are kinds ("none", "ngram", "model", "eagle3"); DraftPath
	// is the model or head file for model and eagle3.
	Drafters  []string
	DraftPath string
	K         []int
	Tree      int
}

// Configs lists the grid's configurations, TP size by TP size.
func (g Grid) Configs() []Config {
	var out []Config
	for _, tpSize := range g.TP {
		backends := g.Backends
		if tpSize == 1 {
			backends = []string{""}
		}
		for _, b := range backends {
			for _, d := range g.Drafters {
				if d == "none" || d == "" {
					out = append(out, Config{Device: g.Device, TP: tpSize, Backend: b, Drafter: "none"})
					continue
				}
				path := ""
				if d == "model" || d == "eagle3" {
					path = g.DraftPath
				}
				for _, k := range g.K {
					out = append(out, Config{Device: g.Device, TP: tpSize, Backend: b, Drafter: d, DrafterPath: path, K: k, Tree: g.Tree})
				}
			}
		}
	}
	return out
}

// Plan predicts every configuration.
func Plan(in Inputs, configs []Config) []Prediction {
	out := make([]Prediction, len(configs))
	for i, c := range configs {
		out[i] = Predict(in, c)
	}
	return out
}

// Missing lists each measurement the predictions lack, once.
func MissingOf(preds []Prediction) []Missing {
	seen := map[Missing]bool{}
	var out []Missing
	for _, p := range preds {
		for _, m := range p.Missing {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}
