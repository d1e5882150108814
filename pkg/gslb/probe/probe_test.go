package probe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// serve starts an HTTP server on addr (127.0.0.x:0 or [::1]:0), closed by t.Cleanup; it
// returns the server's address and port.
func serve(t testing.TB, addr string, tlsOn bool, h http.Handler) (netip.Addr, int) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("listen %s: %v", addr, err)
	}
	s := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	if tlsOn {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	ap := netip.MustParseAddrPort(l.Addr().String())
	return ap.Addr(), int(ap.Port())
}

// status answers every request with code and records the last Host and path.
type status struct {
	code       atomic.Int32
	host, path atomic.Value
}

func (s *status) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.host.Store(r.Host)
	s.path.Store(r.URL.Path)
	w.WriteHeader(int(s.code.Load()))
}

func newStatus(code int) *status {
	s := &status{}
	s.code.Store(int32(code))
	return s
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	t.Cleanup(cancel)
	return c
}

func TestParseStatus(t *testing.T) {
	got, err := ParseStatus([]string{"200", "300-399"})
	if err != nil || !slices.Equal(got, []StatusRange{{200, 200}, {300, 399}}) {
		t.Fatalf("ParseStatus = %v, %v", got, err)
	}
	if got, err := ParseStatus(nil); err != nil || !slices.Equal(got, DefaultStatus) {
		t.Fatalf("ParseStatus(nil) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "99", "600", "2000", "399-200", "200-", "-200", "2x0", "200-6000", "+200"} {
		if _, err := ParseStatus([]string{bad}); err == nil {
			t.Errorf("ParseStatus(%q) accepted", bad)
		}
	}
}

func TestProbe_HTTP(t *testing.T) {
	h := newStatus(200)
	addr, port := serve(t, "127.0.0.1:0", false, h)
	p := &Prober{}
	spec := Spec{Protocol: HTTP, Port: port, Path: "/healthz", Host: "app.gslb.test", Timeout: 5 * time.Second}
	r := p.Probe(ctx(t), Job{Addr: addr, Spec: spec})
	if !r.OK || r.Err != "" || r.Status != 200 || r.End.Before(r.Start) {
		t.Fatalf("200: %+v", r)
	}
	if h.host.Load() != "app.gslb.test" || h.path.Load() != "/healthz" {
		t.Fatalf("the server saw Host %v, path %v", h.host.Load(), h.path.Load())
	}

	h.code.Store(503)
	if r := p.Probe(ctx(t), Job{Addr: addr, Spec: spec}); r.OK || r.Err != "HTTP 503" || r.Status != 503 {
		t.Fatalf("503: %+v", r)
	}
	spec.Expected = []StatusRange{{500, 503}}
	if r := p.Probe(ctx(t), Job{Addr: addr, Spec: spec}); !r.OK {
		t.Fatalf("503 expected: %+v", r)
	}

	// A redirect is a status, not followed: within the default 200-399 it passes.
	h.code.Store(302)
	spec.Expected = nil
	if r := p.Probe(ctx(t), Job{Addr: addr, Spec: spec}); !r.OK || r.Status != 302 {
		t.Fatalf("302: %+v", r)
	}

	// No Host: the target's address and port.
	spec.Host, spec.Path = "", ""
	if r := p.Probe(ctx(t), Job{Addr: addr, Spec: spec}); !r.OK || h.host.Load() != fmt.Sprintf("127.0.0.1:%d", port) || h.path.Load() != "/" {
		t.Fatalf("no host: %+v, server saw Host %v path %v", r, h.host.Load(), h.path.Load())
	}
}

func TestProbe_HTTPOverIPv6(t *testing.T) {
	h := newStatus(204)
	addr, port := serve(t, "[::1]:0", false, h)
	r := (&Prober{}).Probe(ctx(t), Job{Addr: addr, Spec: Spec{Protocol: HTTP, Port: port, Host: "app.gslb.test"}})
	if !r.OK || r.Status != 204 {
		t.Fatalf("::1: %+v", r)
	}
}

func TestProbe_HTTPS(t *testing.T) {
	h := newStatus(200)
	addr, port := serve(t, "127.0.0.1:0", true, h)
	// httptest's certificate is valid for example.com, 127.0.0.1 and ::1.
	pool := x509.NewCertPool()
	pool.AddCert(testCert(t, addr, port))

	trusted := &Prober{RootCAs: pool}
	for _, tc := range []struct {
		name   string
		p      *Prober
		spec   Spec
		ok     bool
		errSub string
	}{
		{"SNI and Host example.com", trusted, Spec{Protocol: HTTPS, Port: port, Host: "example.com"}, true, ""},
		{"by address", trusted, Spec{Protocol: HTTPS, Port: port}, true, ""},
		{"name the certificate lacks", trusted, Spec{Protocol: HTTPS, Port: port, Host: "app.gslb.test"}, false, "TLS: certificate is not valid for app.gslb.test"},
		{"unknown authority", &Prober{}, Spec{Protocol: HTTPS, Port: port, Host: "example.com"}, false, "TLS: certificate signed by unknown authority"},
		{"insecureSkipVerify", &Prober{}, Spec{Protocol: HTTPS, Port: port, Host: "app.gslb.test", InsecureSkipVerify: true}, true, ""},
		{"plain HTTP to a TLS port", trusted, Spec{Protocol: HTTP, Port: port, Host: "example.com"}, false, "HTTP 400"},
	} {
		r := tc.p.Probe(ctx(t), Job{Addr: addr, Spec: tc.spec})
		if r.OK != tc.ok || (tc.errSub != "" && !strings.Contains(r.Err, tc.errSub)) {
			t.Errorf("%s: %+v, want ok %v, error %q", tc.name, r, tc.ok, tc.errSub)
		}
	}
	if h.host.Load() != "app.gslb.test" {
		t.Errorf("Host over TLS: %v", h.host.Load())
	}
}

// testCert fetches the server's certificate.
func testCert(t *testing.T, addr netip.Addr, port int) *x509.Certificate {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: insecure()}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(fmt.Sprintf("https://%s/", netip.AddrPortFrom(addr, uint16(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.TLS.PeerCertificates[0]
}

func TestProbe_TCPAndErrorsInWords(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var held sync.WaitGroup
	conns := make(chan net.Conn, 16)
	held.Add(1)
	go func() {
		defer held.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns <- c // accepted, never answered
		}
	}()
	t.Cleanup(func() {
		l.Close()
		held.Wait()
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	open := netip.MustParseAddrPort(l.Addr().String())

	// A port nobody listens on: take one and close it.
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := netip.MustParseAddrPort(l2.Addr().String())
	l2.Close()

	p := &Prober{}
	for _, tc := range []struct {
		name string
		job  Job
		ok   bool
		err  string
	}{
		{"TCP open", Job{open.Addr(), Spec{Protocol: TCP, Port: int(open.Port())}}, true, ""},
		{"TCP refused", Job{closed.Addr(), Spec{Protocol: TCP, Port: int(closed.Port())}}, false, "connect: connection refused"},
		{"HTTP refused", Job{closed.Addr(), Spec{Protocol: HTTP, Port: int(closed.Port())}}, false, "connect: connection refused"},
		{"HTTP never answered", Job{open.Addr(), Spec{Protocol: HTTP, Port: int(open.Port()), Timeout: 300 * time.Millisecond}}, false, "timeout after 300ms"},
		{"HTTPS handshake never answered", Job{open.Addr(), Spec{Protocol: HTTPS, Port: int(open.Port()), Timeout: 300 * time.Millisecond}}, false, "timeout after 300ms"},
		{"unknown protocol", Job{open.Addr(), Spec{Protocol: "UDP", Port: int(open.Port())}}, false, `unknown protocol "UDP"`},
		{"no port", Job{open.Addr(), Spec{Protocol: TCP}}, false, "bad target"},
	} {
		r := p.Probe(ctx(t), tc.job)
		if r.OK != tc.ok || r.Err != tc.err && !strings.HasPrefix(r.Err, tc.err) {
			t.Errorf("%s: %+v, want ok %v, error %q", tc.name, r, tc.ok, tc.err)
		}
	}

	// A server that closes without answering.
	l3, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l3.Close() })
	go func() {
		for {
			c, err := l3.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	ap := netip.MustParseAddrPort(l3.Addr().String())
	if r := p.Probe(ctx(t), Job{ap.Addr(), Spec{Protocol: HTTP, Port: int(ap.Port())}}); r.OK || (r.Err != "connection closed before the response" && r.Err != "connection reset by peer") {
		t.Errorf("closed at once: %+v", r)
	}

	// A cancelled context says so.
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if r := p.Probe(c, Job{open.Addr(), Spec{Protocol: HTTP, Port: int(open.Port())}}); r.OK || r.Err != "cancelled" {
		t.Errorf("cancelled: %+v", r)
	}
}

// TestRun_BoundedAndInOrder: Run keeps at most Workers probes in flight, returns every result
// in the order of the jobs, and no goroutine of its own outlives it.
func TestRun_BoundedAndInOrder(t *testing.T) {
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
		if r.URL.Path == "/bad" {
			w.WriteHeader(500)
		}
	})
	addr, port := serve(t, "127.0.0.1:0", false, h)
	var jobs []Job
	for i := range 10 {
		path := "/ok"
		if i%3 == 0 {
			path = "/bad"
		}
		jobs = append(jobs, Job{Addr: addr, Spec: Spec{Protocol: HTTP, Port: port, Path: path, Timeout: testrun.HangTimeout}})
	}
	p := &Prober{Workers: 3, Jitter: time.Millisecond}
	done := make(chan []Result)
	go func() { done <- p.Run(ctx(t), jobs) }()
	deadline := time.Now().Add(testrun.HangTimeout)
	for sent := 0; sent < len(jobs); {
		if inFlight.Load() == int32(min(3, len(jobs)-sent)) {
			release <- struct{}{}
			sent++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("in flight %d after %d released", inFlight.Load(), sent)
		}
		time.Sleep(time.Millisecond)
	}
	res := <-done
	if most.Load() != 3 {
		t.Fatalf("at most %d probes in flight, want 3", most.Load())
	}
	for i, r := range res {
		if r.Job.Spec.Path != jobs[i].Spec.Path || r.OK == (i%3 == 0) {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if (&Prober{}).Run(ctx(t), nil) != nil {
		t.Fatal("results for no jobs")
	}
}

func insecure() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec // test only: fetches the test server's certificate

// TestProbe_CannotAttemptFromHereAbstains: a probe whose dial fails on this host (here a real
// EADDRNOTAVAIL: the source address of the target's family is on no interface) is an
// abstention, not a failure, for each family; a refused connection stays a failure.
func TestProbe_CannotAttemptFromHereAbstains(t *testing.T) {
	addr4, port4 := serve(t, "127.0.0.1:0", false, newStatus(200))
	p := &Prober{Source: gslb.SourceAddrs{V4: netip.MustParseAddr("198.51.100.7"), V6: netip.MustParseAddr("2001:db8::7")}}
	spec := Spec{Protocol: HTTP, Port: port4, Timeout: 5 * time.Second}
	r := p.Probe(ctx(t), Job{Addr: addr4, Spec: spec})
	if r.OK || !r.Abstain || !strings.HasPrefix(r.Err, "cannot probe from here: connect: cannot assign requested address") {
		t.Fatalf("IPv4 from a source on no interface: %+v; want an abstention", r)
	}
	if l, err := net.Listen("tcp", "[::1]:0"); err == nil {
		port6 := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		r = p.Probe(ctx(t), Job{Addr: netip.IPv6Loopback(), Spec: Spec{Protocol: TCP, Port: port6, Timeout: 5 * time.Second}})
		if r.OK || !r.Abstain || !strings.Contains(r.Err, "cannot assign requested address") {
			t.Fatalf("IPv6 from a source on no interface: %+v; want an abstention", r)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	r = (&Prober{}).Probe(ctx(t), Job{Addr: netip.MustParseAddr("127.0.0.1"), Spec: Spec{Protocol: TCP, Port: refused, Timeout: 5 * time.Second}})
	if r.OK || r.Abstain || r.Err != "connect: connection refused" {
		t.Fatalf("refused: %+v; want a failure, not an abstention", r)
	}
}
