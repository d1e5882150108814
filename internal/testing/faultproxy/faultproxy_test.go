package faultproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// upstream is a loopback API that counts the requests it applied and answers "ok:<path>".
func upstream(t *testing.T, tls bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var applied atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		applied.Add(1)
		w.Header().Set("X-Upstream", "yes")
		_, _ = io.WriteString(w, "ok:"+r.URL.Path+strings.Repeat(".", 200))
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv, &applied
}

func get(c *http.Client, method, url string, timeout time.Duration) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, nil)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestProxy_EachFault(t *testing.T) {
	for _, tls := range []bool{false, true} {
		up, applied := upstream(t, tls)
		opts := Options{TLS: tls, SlowChunk: 50, SlowEvery: 5 * time.Millisecond}
		if tls {
			opts.Transport = up.Client().Transport
		}
		p := New(up.URL, opts)
		t.Cleanup(p.Close)
		c := p.Client()
		tests := []struct {
			k           Kind
			status      int    // 0: a transport error
			errIs       error  // with status 0
			retryAfter  string // the reply's Retry-After
			wantApplied int64  // the upstream's applied count goes up by this
		}{
			{k: Pass, status: 200, wantApplied: 1},
			{k: Status500, status: 500},
			{k: Status502, status: 502},
			{k: Status503, status: 503},
			{k: Throttle, status: 429},
			{k: ThrottleRetryAfter, status: 429, retryAfter: "1"},
			{k: Hang, errIs: context.DeadlineExceeded},
			{k: Reset, errIs: syscall.ECONNRESET},
			{k: SlowBody, status: 200, wantApplied: 1},
			{k: LostReply, errIs: syscall.ECONNRESET, wantApplied: 1},
		}
		for _, tc := range tests {
			t.Run(tc.k.String(), func(t *testing.T) {
				p.SetPolicy(Always(tc.k))
				before := applied.Load()
				timeout := 30 * time.Second // a hang deadline, except for the hang itself
				if tc.k == Hang {
					timeout = 300 * time.Millisecond
				}
				resp, body, err := get(c, http.MethodPut, p.URL()+"/zones/a", timeout)
				if got := applied.Load() - before; got != tc.wantApplied {
					t.Errorf("upstream applied %d requests, want %d", got, tc.wantApplied)
				}
				if tc.status == 0 {
					if err == nil {
						t.Fatalf("got HTTP %d, want an error", resp.StatusCode)
					}
					if tc.errIs == syscall.ECONNRESET && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
						t.Fatalf("error %v, want a connection reset", err)
					}
					if tc.errIs == context.DeadlineExceeded && !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("error %v, want the client's deadline", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter {
					t.Fatalf("HTTP %d Retry-After %q, want %d %q", resp.StatusCode, resp.Header.Get("Retry-After"), tc.status, tc.retryAfter)
				}
				if tc.k.Forwards() && !strings.HasPrefix(string(body), "ok:/zones/a") {
					t.Fatalf("body %q, want the upstream's", body)
				}
			})
		}
		c2 := p.Counts()
		if c2.Requests != uint64(len(tests)) || c2.Faulted() != uint64(len(tests)-1) || c2.Forwarded != 3 || c2.UpstreamStatus[200] != 3 {
			t.Errorf("counts %+v, want %d requests, %d faulted, 3 forwarded and answered 200", c2, len(tests), len(tests)-1)
		}
		for _, k := range append(Faults(), Pass) {
			if c2.ByKind[k] != 1 {
				t.Errorf("%s counted %d times, want 1", k, c2.ByKind[k])
			}
		}
	}
}

func TestPolicies(t *testing.T) {
	get := func(n uint64, elapsed time.Duration, method string) Request {
		return Request{N: n, Elapsed: elapsed, HTTP: &http.Request{Method: method}}
	}
	if k := Nth(3, Reset)(get(3, 0, "GET")); k != Reset {
		t.Errorf("Nth(3) on request 3 = %s", k)
	}
	if k := Nth(3, Reset)(get(4, 0, "GET")); k != Pass {
		t.Errorf("Nth(3) on request 4 = %s", k)
	}
	w := Window(time.Second, 2*time.Second, Always(Status503))
	for _, tc := range []struct {
		at   time.Duration
		want Kind
	}{{999 * time.Millisecond, Pass}, {time.Second, Status503}, {1999 * time.Millisecond, Status503}, {2 * time.Second, Pass}} {
		if k := w(get(1, tc.at, "GET")); k != tc.want {
			t.Errorf("Window at %s = %s, want %s", tc.at, k, tc.want)
		}
	}
	wr := Writes(Always(Status500))
	for m, want := range map[string]Kind{"GET": Pass, "HEAD": Pass, "OPTIONS": Pass, "PATCH": Status500, "POST": Status500, "PUT": Status500, "DELETE": Status500} {
		if k := wr(get(1, 0, m)); k != want {
			t.Errorf("Writes on %s = %s, want %s", m, k, want)
		}
	}
	if k := First(Nth(2, Hang), Always(Status502))(get(2, 0, "GET")); k != Hang {
		t.Errorf("First picked %s, want hang", k)
	}
	if k := First(Nth(2, Hang), None)(get(1, 0, "GET")); k != Pass {
		t.Errorf("First of passes = %s", k)
	}
	// Rate: close to p over many requests, the same for the same seed, every kind drawn.
	for _, p := range []float64{0, 0.1, 0.3, 0.5, 1} {
		r := Rate(p, 7, Status500, Throttle)
		faulted, by := 0, map[Kind]int{}
		for n := uint64(1); n <= 10000; n++ {
			k := r(get(n, 0, "PATCH"))
			if k != Pass {
				faulted++
			}
			by[k]++
			if again := Rate(p, 7, Status500, Throttle)(get(n, 0, "PATCH")); again != k {
				t.Fatalf("Rate(%v) not repeatable at request %d: %s then %s", p, n, k, again)
			}
		}
		if got := float64(faulted) / 10000; got < p-0.02 || got > p+0.02 {
			t.Errorf("Rate(%v) faulted %.3f of requests", p, got)
		}
		if p > 0 && (by[Status500] == 0 || by[Throttle] == 0) {
			t.Errorf("Rate(%v) drew %v, want both kinds", p, by)
		}
	}
	if k := Rate(1, 1)(get(1, 0, "GET")); k != Pass {
		t.Errorf("Rate with no kinds = %s", k)
	}
	// Cycle: the requests Rate faults, with the kinds in turn.
	kinds := Faults()
	c, rate := Cycle(0.3, 7, kinds...), Rate(0.3, 7, Status500)
	var got []Kind
	for n := uint64(1); n <= 200; n++ {
		k := c(get(n, 0, "GET"))
		if (k == Pass) != (rate(get(n, 0, "GET")) == Pass) {
			t.Fatalf("Cycle and Rate disagree on request %d: %s", n, k)
		}
		if k != Pass {
			got = append(got, k)
		}
	}
	if len(got) < len(kinds) {
		t.Fatalf("Cycle(0.3) faulted %d of 200 requests", len(got))
	}
	for i, k := range got {
		if k != kinds[i%len(kinds)] {
			t.Fatalf("Cycle's fault %d is %s, want %s", i, k, kinds[i%len(kinds)])
		}
	}
	if k := Cycle(1, 1)(get(1, 0, "GET")); k != Pass {
		t.Errorf("Cycle with no kinds = %s", k)
	}
}

func TestProxy_CloseReleasesHangs(t *testing.T) {
	up, _ := upstream(t, false)
	p := New(up.URL, Options{})
	p.SetPolicy(Always(Hang))
	errc := make(chan error, 1)
	go func() {
		_, _, err := get(http.DefaultClient, http.MethodGet, p.URL()+"/", time.Minute)
		errc <- err
	}()
	for p.Counts().Requests == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return with a hanging request (hang deadline)")
	}
	if err := <-errc; err == nil {
		t.Fatal("the hanging request got a reply")
	}
}

func TestProxy_ResetCountsAndUpstreamDown(t *testing.T) {
	up, _ := upstream(t, false)
	p := New(up.URL, Options{})
	t.Cleanup(p.Close)
	for range 3 {
		if _, _, err := get(p.Client(), http.MethodGet, p.URL()+"/", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	p.Reset()
	var seen []uint64
	p.SetPolicy(func(r Request) Kind { seen = append(seen, r.N); return Pass })
	up.Close()
	resp, _, err := get(p.Client(), http.MethodGet, p.URL()+"/", 10*time.Second)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("upstream down: %v %v, want HTTP 502", resp, err)
	}
	c := p.Counts()
	if c.Requests != 1 || c.UpstreamErrors != 1 || len(c.UpstreamStatus) != 0 || len(seen) != 1 || seen[0] != 1 {
		t.Fatalf("after Reset: %+v, numbers %v; want 1 request numbered 1, 1 upstream error", c, seen)
	}
}

func TestKind_String(t *testing.T) {
	if s := Kind(99).String(); s != "kind(99)" {
		t.Errorf("Kind(99) = %q", s)
	}
	if len(Faults()) != int(kinds)-1 {
		t.Errorf("Faults() = %v", Faults())
	}
}

// flushCounter records what a slowWriter writes and how often it flushes.
type flushCounter struct {
	*httptest.ResponseRecorder
	writes, flushes int
}

func (f *flushCounter) Write(b []byte) (int, error) { f.writes++; return f.ResponseRecorder.Write(b) }
func (f *flushCounter) Flush()                      { f.flushes++ }

// TestSlowWriter_WritesChunkByChunk: a 211-byte body goes out as 5 chunks of at most 50 bytes,
// each flushed, so the client gets it piece by piece; a client gone stops it.
func TestSlowWriter_WritesChunkByChunk(t *testing.T) {
	rec := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sw := &slowWriter{ResponseWriter: rec, chunk: 50, every: time.Millisecond, done: make(chan struct{}), closing: make(chan struct{})}
	body := strings.Repeat("x", 211)
	if n, err := sw.Write([]byte(body)); n != 211 || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if rec.writes != 5 || rec.flushes != 5 || rec.Body.String() != body {
		t.Fatalf("%d writes, %d flushes, %d bytes; want 5, 5 and the whole body", rec.writes, rec.flushes, rec.Body.Len())
	}
	gone := make(chan struct{})
	close(gone)
	rec2 := &flushCounter{ResponseRecorder: httptest.NewRecorder()}
	sw2 := &slowWriter{ResponseWriter: rec2, chunk: 50, every: time.Hour, done: gone, closing: make(chan struct{})}
	if n, err := sw2.Write([]byte(body)); n != 50 || err == nil {
		t.Fatalf("client gone: Write = %d, %v; want the first chunk and an error", n, err)
	}
}
