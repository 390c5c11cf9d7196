package main

import "rigscope/internal/plancmd"

// plan: the what-if planner (internal/plancmd).
func init() {
	register(command{name: "plan", summary: plancmd.Summary, run: plancmd.Run})
}
