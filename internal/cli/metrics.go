package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"rigscope/engine"
	"rigscope/engine/metrics/prom"
	"rigscope/engine/metrics/promserve"
)

// MetricsAddrFlag registers --metrics-addr, for the panel and every
// headless command that runs the engine.
func MetricsAddrFlag(fs *flag.FlagSet) *string {
	return fs.String("metrics-addr", "", promserve.FlagHelp)
}

// StartMetrics serves /metrics at addr ("" serves nothing) until ctx ends
// or stop is called; the observer it returns goes into engine.Options (it
// is nil when addr is ""), so every run of every engine opened with it
// adds to the same process-lifetime counters.
func StartMetrics(ctx context.Context, addr string, stderr io.Writer) (obs engine.Observer, stop func() error, err error) {
	if addr == "" {
		return nil, func() error { return nil }, nil
	}
	x := prom.New()
	srv, err := promserve.Start(ctx, addr, x.Handler(), promserve.DefaultLimits, stderr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	fmt.Fprintf(stderr, "serving Prometheus metrics at %s\n", srv.URL())
	return x, srv.Close, nil
}
