// Package promserve serves a Prometheus handler at /metrics, for the panel
// and the headless commands alike. The listener is loopback unless the
// address names a host, and is hard to hold open: header, read, write and
// idle timeouts, a header size limit, no request bodies, GET and HEAD only,
// and a cap on open connections.
package promserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Limits bound what one client can hold.
type Limits struct {
	ReadHeaderTimeout time.Duration // a request's header must arrive within this
	ReadTimeout       time.Duration // the whole request
	WriteTimeout      time.Duration // the response
	IdleTimeout       time.Duration // a kept-alive connection between requests
	MaxHeaderBytes    int
	MaxConns          int // open connections; more wait in the kernel's backlog
}

// DefaultLimits suit a scraper every few seconds: a scrape is a few
// hundred bytes of request and well under a second of work.
var DefaultLimits = Limits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      30 * time.Second,
	IdleTimeout:       60 * time.Second,
	MaxHeaderBytes:    8 << 10,
	MaxConns:          32,
}

// FlagHelp is the --metrics-addr help, for every command that has it.
const FlagHelp = "serve Prometheus metrics at http://ADDR/metrics; a bare :PORT listens on loopback only (127.0.0.1), " +
	"0.0.0.0:PORT or a host's address listens beyond it, unauthenticated (default: no server)"

// BindAddr is the address Listen binds for addr: a missing host means
// loopback (":9400" is 127.0.0.1:9400); a named host is kept.
func BindAddr(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: want HOST:PORT or :PORT (:9400 is 127.0.0.1:9400; 0.0.0.0:9400 listens on every interface)", addr)
	}
	if port == "" {
		return "", fmt.Errorf("%q has no port: want HOST:PORT or :PORT", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Server is a running /metrics server.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
	err  error       // from Serve, other than the close
	stop func() bool // unregisters the close at ctx's end
}

// Start binds addr (see BindAddr) and serves h at /metrics until ctx ends
// or Close is called. When the bound address is not a loopback one it
// writes one warning line to warn.
func Start(ctx context.Context, addr string, h http.Handler, lim Limits, warn io.Writer) (*Server, error) {
	bind, err := BindAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s for /metrics: %w", bind, err)
	}
	s := &Server{addr: ln.Addr(), done: make(chan struct{})}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		fmt.Fprintf(warn, "warning: /metrics on %s is reachable beyond loopback and unauthenticated: anyone who can reach the port reads the model name, token counts and timings\n", ln.Addr())
	}
	if lim.MaxConns > 0 {
		ln = netutil.LimitListener(ln, lim.MaxConns)
	}
	s.srv = &http.Server{
		Handler:           Handler(h),
		ReadHeaderTimeout: lim.ReadHeaderTimeout,
		ReadTimeout:       lim.ReadTimeout,
		WriteTimeout:      lim.WriteTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = fmt.Errorf("/metrics on %s: %w", s.addr, err)
		}
	}()
	s.stop = context.AfterFunc(ctx, func() { s.srv.Close() })
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when
// addr asked for port 0).
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops the server, dropping open connections, and returns the
// error serving stopped with, if it failed before.
func (s *Server) Close() error {
	s.stop()
	s.srv.Close()
	<-s.done
	return s.err
}

// Handler answers GET and HEAD of /metrics with h, 405 (with Allow) for
// other methods, 413 for a request with a body (a scrape has none) and 404
// for every other path. Refusals close the connection without reading
// the rest of the request.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(code int, msg string) {
			w.Header().Set("Connection", "close")
			http.Error(w, msg, code)
			// Stop reading now: the server would otherwise drain up to
			// 256 KiB of an unread body before closing, at the client's pace.
			http.NewResponseController(w).SetReadDeadline(time.Now())
		}
		switch {
		case r.URL.Path != "/metrics":
			refuse(http.StatusNotFound, "404 not found: only /metrics is served")
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			w.Header().Set("Allow", "GET, HEAD")
			refuse(http.StatusMethodNotAllowed, "405 method not allowed: /metrics answers GET and HEAD")
		case r.ContentLength != 0 || len(r.TransferEncoding) > 0:
			refuse(http.StatusRequestEntityTooLarge, "413 a scrape has no request body")
		default:
			h.ServeHTTP(w, r)
		}
	})
}

// URL is where the metrics are.
func (s *Server) URL() string { return "http://" + s.addr.String() + "/metrics" }
