package promserve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })

// short are limits a test can outlast: every timeout a fraction of a second.
var short = Limits{ReadHeaderTimeout: 150 * time.Millisecond, ReadTimeout: 300 * time.Millisecond,
	WriteTimeout: time.Second, IdleTimeout: 150 * time.Millisecond, MaxHeaderBytes: 1 << 10, MaxConns: 8}

// liveness bounds how long a test waits for the server to act; a server
// that never does fails the test instead of hanging it.
const liveness = 10 * time.Second

func start(t *testing.T, addr string, lim Limits) (*Server, *strings.Builder) {
	t.Helper()
	var warn strings.Builder
	s, err := Start(context.Background(), addr, hello, lim, &warn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, &warn
}

func TestBindAddr(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{":9400", "127.0.0.1:9400", ""},
		{"127.0.0.1:9400", "127.0.0.1:9400", ""},
		{"0.0.0.0:9400", "0.0.0.0:9400", ""},
		{"[::]:9400", "[::]:9400", ""},
		{"localhost:9400", "localhost:9400", ""},
		{"9400", "", "want HOST:PORT or :PORT"},
		{"", "", "want HOST:PORT or :PORT"},
		{"127.0.0.1:", "", "has no port"},
	}
	for _, c := range cases {
		got, err := BindAddr(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("BindAddr(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("BindAddr(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestLoopbackByDefault: a bare port binds 127.0.0.1 with no warning; an
// unspecified host binds every interface and warns once.
func TestLoopbackByDefault(t *testing.T) {
	s, warn := start(t, ":0", short)
	if ip := s.Addr().(*net.TCPAddr).IP; !ip.Equal(net.IPv4(127, 0, 0, 1)) || warn.Len() != 0 {
		t.Errorf(":0 bound %v (warning %q), want 127.0.0.1 and no warning", s.Addr(), warn)
	}
	s, warn = start(t, "0.0.0.0:0", short)
	if !s.Addr().(*net.TCPAddr).IP.IsUnspecified() || !strings.Contains(warn.String(), "beyond loopback and unauthenticated") ||
		strings.Count(warn.String(), "\n") != 1 {
		t.Errorf("0.0.0.0:0 bound %v, warning %q; want every interface and one warning line", s.Addr(), warn)
	}
}

func TestBindFailureNamesAddress(t *testing.T) {
	s, _ := start(t, ":0", short)
	port := s.Addr().(*net.TCPAddr).Port
	addr := ":" + itoa(port)
	_, err := Start(context.Background(), addr, hello, short, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:"+itoa(port)) {
		t.Errorf("second listen on %s: %v, want an error naming 127.0.0.1:%d", addr, err, port)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestMethodsAndPaths(t *testing.T) {
	s, _ := start(t, ":0", short)
	url := "http://" + s.Addr().String()
	cases := []struct {
		method, path, body string
		code               int
		allow              string
	}{
		{"GET", "/metrics", "", 200, ""},
		{"HEAD", "/metrics", "", 200, ""},
		{"POST", "/metrics", "x=1", 405, "GET, HEAD"},
		{"PUT", "/metrics", "x", 405, "GET, HEAD"},
		{"DELETE", "/metrics", "", 405, "GET, HEAD"},
		{"PATCH", "/metrics", "", 405, "GET, HEAD"},
		{"OPTIONS", "/metrics", "", 405, "GET, HEAD"},
		{"GET", "/metrics", "a body", 413, ""},
		{"GET", "/", "", 404, ""},
		{"GET", "/metrics/", "", 404, ""},
		{"GET", "/debug/pprof/", "", 404, ""},
		{"POST", "/other", "x", 404, ""},
	}
	for _, c := range cases {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, _ := http.NewRequest(c.method, url+c.path, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d (Allow %q), want %d (Allow %q)", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.code, c.allow)
		}
		if c.code == 200 && c.method == "GET" && string(b) != "up 1\n" {
			t.Errorf("GET /metrics body %q", b)
		}
		if c.method == "HEAD" && len(b) != 0 {
			t.Errorf("HEAD /metrics sent a body %q", b)
		}
	}
}

// waitClosed reads from c until the server closes it; it fails the test
// when the connection is still open after the liveness bound.
func waitClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(liveness))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: connection still open after %v", what, liveness)
	}
}

func dial(t *testing.T, s *Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// only returns short with every timeout but the named one out of reach of
// the test, so that one alone can close a connection.
func only(field string) Limits {
	l := short
	l.ReadTimeout, l.WriteTimeout, l.IdleTimeout, l.ReadHeaderTimeout = 2*liveness, 2*liveness, 2*liveness, 2*liveness
	switch field {
	case "ReadHeaderTimeout":
		l.ReadHeaderTimeout = short.ReadHeaderTimeout
	case "IdleTimeout":
		l.IdleTimeout = short.IdleTimeout
	}
	return l
}

// TestSlowLoris: a header trickled a byte at a time is cut off by the
// header timeout, and so is a connection that sends nothing.
func TestSlowLoris(t *testing.T) {
	s, _ := start(t, ":0", only("ReadHeaderTimeout"))
	trickle := dial(t, s)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		msg := "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 1000)
		for i := 0; i < len(msg); i++ {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if _, err := trickle.Write([]byte{msg[i]}); err != nil {
				return // closed by the server
			}
		}
	}()
	waitClosed(t, trickle, "a header trickled a byte every 10ms")
	waitClosed(t, dial(t, s), "a connection that sends nothing")
}

// TestBodyTrickle: a POST whose body trickles gets its 405 at once and the
// connection closed, without the server reading the body.
func TestBodyTrickle(t *testing.T) {
	s, _ := start(t, ":0", only("none"))
	c := dial(t, s)
	io.WriteString(c, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nx")
	c.SetReadDeadline(time.Now().Add(liveness))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || !resp.Close {
		t.Errorf("trickled POST: %d, close %v; want 405 and the connection closed", resp.StatusCode, resp.Close)
	}
	waitClosed(t, c, "a trickled POST body")
}

// TestIdleClosed: a kept-alive connection with nothing more to ask is
// closed by the idle timeout.
func TestIdleClosed(t *testing.T) {
	s, _ := start(t, ":0", only("IdleTimeout"))
	c := dial(t, s)
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(liveness))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("keep-alive GET: %d close %v", resp.StatusCode, resp.Close)
	}
	c.SetReadDeadline(time.Now().Add(liveness))
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Errorf("idle keep-alive connection: %v, want closed by the server within %v", err, liveness)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	s, _ := start(t, ":0", short)
	c := dial(t, s)
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("b", 8<<10)+"\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(liveness))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("8 KiB header over a 1 KiB limit: %d, want 431", resp.StatusCode)
	}
}

// TestMaxConns: with one connection allowed and held, another is not
// served; once the first is closed, it is.
func TestMaxConns(t *testing.T) {
	lim := short
	lim.MaxConns, lim.ReadHeaderTimeout, lim.ReadTimeout = 1, liveness, liveness
	s, _ := start(t, ":0", lim)
	held := dial(t, s)
	io.WriteString(held, "GET /metrics HTTP/1.1\r\n") // header never finished
	client := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := client.Get("http://" + s.Addr().String() + "/metrics"); err == nil {
		resp.Body.Close()
		t.Fatalf("a second connection was served while the only slot was held")
	}
	held.Close()
	client.Timeout = liveness
	resp, err := client.Get("http://" + s.Addr().String() + "/metrics")
	if err != nil {
		t.Fatalf("after the held connection closed: %v", err)
	}
	resp.Body.Close()
}

// TestContextStops: ending the context stops the server.
func TestContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, ":0", hello, short, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.Close(); err != nil {
		t.Errorf("Close after the context ended: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr().String(), liveness); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after the context ended", s.Addr())
	}
}

// FuzzBindAddr: any input either is refused or gives a HOST:PORT with a
// host (loopback when the input had none) and the input's port.
func FuzzBindAddr(f *testing.F) {
	for _, s := range []string{":9400", "0.0.0.0:9400", "[::1]:0", "9400", "", ":", "a:b:c", "[::1", "localhost:http"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		got, err := BindAddr(addr)
		if err != nil {
			return
		}
		host, port, err := net.SplitHostPort(got)
		inHost, inPort, _ := net.SplitHostPort(addr)
		if err != nil || host == "" || port != inPort || (inHost == "" && host != "127.0.0.1") || (inHost != "" && host != inHost) {
			t.Errorf("BindAddr(%q) = %q: host %q port %q (%v)", addr, got, host, port, err)
		}
	})
}
