package faultproxy

import (
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the fault a request gets.
type Kind int

const (
	// Pass forwards the request and returns the upstream's reply unchanged.
	Pass Kind = iota
	// Status500 answers HTTP 500 without forwarding.
	Status500
	// Status502 answers HTTP 502 without forwarding.
	Status502
	// Status503 answers HTTP 503 without forwarding.
	Status503
	// Throttle answers HTTP 429 without a Retry-After header, without forwarding.
	Throttle
	// ThrottleRetryAfter answers HTTP 429 with "Retry-After: <Options.RetryAfter in seconds>",
	// without forwarding.
	ThrottleRetryAfter
	// Hang holds the request unanswered, without forwarding, until the client gives up (its
	// context or connection closes) or the proxy closes: a timeout on the client's side.
	Hang
	// Reset closes the client's connection with a TCP RST, without forwarding.
	Reset
	// SlowBody forwards the request and returns the upstream's status and headers at once,
	// then the body Options.SlowChunk bytes per Options.SlowEvery.
	SlowBody
	// LostReply forwards the request, so the upstream applies it, reads the whole reply, and
	// then resets the client's connection: a write applied whose reply never arrived.
	LostReply
	kinds // the number of kinds
)

var kindNames = [kinds]string{"pass", "http-500", "http-502", "http-503", "http-429", "http-429-retry-after", "hang", "reset", "slow-body", "lost-reply"}

// String is the kind's name as the fault tables print it, e.g. "http-429-retry-after".
func (k Kind) String() string {
	if k < 0 || k >= kinds {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// status is the HTTP status a status fault answers, 0 for the others.
func (k Kind) status() int {
	switch k {
	case Status500:
		return http.StatusInternalServerError
	case Status502:
		return http.StatusBadGateway
	case Status503:
		return http.StatusServiceUnavailable
	case Throttle, ThrottleRetryAfter:
		return http.StatusTooManyRequests
	}
	return 0
}

// Forwards reports whether a request with this fault reaches the upstream.
func (k Kind) Forwards() bool { return k == Pass || k == SlowBody || k == LostReply }

// Faults lists every kind but Pass, in order.
func Faults() []Kind {
	out := make([]Kind, 0, kinds-1)
	for k := Status500; k < kinds; k++ {
		out = append(out, k)
	}
	return out
}

// Request is what a Policy decides on.
type Request struct {
	// N is the request's number at this proxy, from 1, in the order they arrived.
	N uint64
	// Elapsed is the time since the proxy started (or since Reset).
	Elapsed time.Duration
	// HTTP is the client's request; a Policy must not read its body.
	HTTP *http.Request
}

// Policy picks the fault for one request. It is called once per request, possibly from many
// goroutines at once, and must be safe for that.
type Policy func(Request) Kind

// None passes every request.
func None(Request) Kind { return Pass }

// Always gives every request the fault k.
func Always(k Kind) Policy { return func(Request) Kind { return k } }

// Rate gives a request a fault with probability p (0 to 1), the fault drawn uniformly from ks,
// or Pass when ks is empty. The draw depends only on seed and the request's number, so a run
// with the same requests in the same order gets the same faults.
func Rate(p float64, seed uint64, ks ...Kind) Policy {
	return func(r Request) Kind {
		if len(ks) == 0 {
			return Pass
		}
		rng := rand.New(rand.NewPCG(seed, r.N))
		if rng.Float64() >= p {
			return Pass
		}
		return ks[rng.IntN(len(ks))]
	}
}

// Cycle faults the same requests as Rate(p, seed, ...), but gives them ks in turn, in the
// order they are decided, instead of drawing: n faulted requests get each kind n/len(ks) times
// (one more for the first n%len(ks)), so that a short run still sees every kind once it has
// len(ks) faults. Pass when ks is empty. Safe for concurrent use.
func Cycle(p float64, seed uint64, ks ...Kind) Policy {
	if len(ks) == 0 {
		return None
	}
	picked := Rate(p, seed, Status500)
	var next atomic.Uint64
	return func(r Request) Kind {
		if picked(r) == Pass {
			return Pass
		}
		return ks[(next.Add(1)-1)%uint64(len(ks))]
	}
}

// Nth gives the request numbered n (from 1) the fault k, and passes every other.
func Nth(n uint64, k Kind) Policy {
	return func(r Request) Kind {
		if r.N == n {
			return k
		}
		return Pass
	}
}

// Window applies p to the requests that arrive from `from` until `to` after the proxy's start,
// and passes the others.
func Window(from, to time.Duration, p Policy) Policy {
	return func(r Request) Kind {
		if r.Elapsed < from || r.Elapsed >= to {
			return Pass
		}
		return p(r)
	}
}

// Writes applies p to the requests whose method is neither GET, HEAD nor OPTIONS, and passes
// the reads.
func Writes(p Policy) Policy {
	return func(r Request) Kind {
		switch r.HTTP.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return Pass
		}
		return p(r)
	}
}

// First returns the first fault any of ps picks, or Pass.
func First(ps ...Policy) Policy {
	return func(r Request) Kind {
		for _, p := range ps {
			if k := p(r); k != Pass {
				return k
			}
		}
		return Pass
	}
}

// Options configures a Proxy. The zero value is usable: plain HTTP, http.DefaultTransport
// upstream, Retry-After 1 s, 64-byte chunks every 50 ms.
type Options struct {
	// TLS serves HTTPS (httptest's certificate, trusted by Proxy.Client) instead of HTTP.
	TLS bool
	// Transport reaches the upstream, e.g. a TLS fake's Client().Transport; nil is
	// http.DefaultTransport.
	Transport http.RoundTripper
	// RetryAfter is the Retry-After of ThrottleRetryAfter, whole seconds (at least 1).
	RetryAfter time.Duration
	// SlowChunk and SlowEvery pace SlowBody: SlowChunk bytes per SlowEvery.
	SlowChunk int
	SlowEvery time.Duration
}

// Counts are a proxy's exact request counts.
type Counts struct {
	// Requests is every request the proxy received.
	Requests uint64
	// ByKind is the requests per fault they got (Pass included).
	ByKind map[Kind]uint64
	// Forwarded is the requests sent to the upstream (Pass, SlowBody, LostReply).
	Forwarded uint64
	// UpstreamStatus is the upstream's replies per HTTP status; UpstreamErrors the forwarded
	// requests that got no reply (the upstream down, the client gone first).
	UpstreamStatus map[int]uint64
	UpstreamErrors uint64
}

// Faulted is the requests that got a fault other than Pass.
func (c Counts) Faulted() uint64 { return c.Requests - c.ByKind[Pass] }

// Proxy is a fault-injecting HTTP proxy on 127.0.0.1. All methods are safe for concurrent use.
type Proxy struct {
	srv     *httptest.Server
	rp      *httputil.ReverseProxy
	opts    Options
	policy  atomic.Pointer[Policy]
	closing chan struct{}
	once    sync.Once

	n      atomic.Uint64
	mu     sync.Mutex
	start  time.Time
	counts Counts
}

// New starts a proxy to upstream (a URL such as "http://127.0.0.1:8081"), passing every request
// until SetPolicy. It panics if upstream does not parse, as httptest.NewServer panics when it
// cannot listen. Close it when done.
func New(upstream string, opts Options) *Proxy {
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		panic(fmt.Sprintf("faultproxy: upstream %q is not a URL", upstream))
	}
	if opts.RetryAfter < time.Second {
		opts.RetryAfter = time.Second
	}
	if opts.SlowChunk <= 0 {
		opts.SlowChunk = 64
	}
	if opts.SlowEvery <= 0 {
		opts.SlowEvery = 50 * time.Millisecond
	}
	p := &Proxy{opts: opts, closing: make(chan struct{}), start: time.Now()}
	p.counts = Counts{ByKind: map[Kind]uint64{}, UpstreamStatus: map[int]uint64{}}
	none := Policy(None)
	p.policy.Store(&none)
	p.rp = &httputil.ReverseProxy{
		// The upstream sees the client's Host header, as behind a transparent proxy: a request
		// signature over Host (AWS SigV4) stays valid, and an upstream that builds URLs from
		// Host (Azure's issuer, operation and nextLink URLs) sends the client back through here.
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: opts.Transport,
		ModifyResponse: func(resp *http.Response) error {
			p.mu.Lock()
			p.counts.UpstreamStatus[resp.StatusCode]++
			p.mu.Unlock()
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			p.mu.Lock()
			p.counts.UpstreamErrors++
			p.mu.Unlock()
			http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		},
	}
	h := http.HandlerFunc(p.serve)
	if opts.TLS {
		p.srv = httptest.NewTLSServer(h)
	} else {
		p.srv = httptest.NewServer(h)
	}
	return p
}

// URL is the proxy's base URL, e.g. "http://127.0.0.1:40123", to give the client in place of
// the upstream's.
func (p *Proxy) URL() string { return p.srv.URL }

// Client is an HTTP client that trusts the proxy's certificate (with TLS) and keeps no
// connection the proxy reset.
func (p *Proxy) Client() *http.Client { return p.srv.Client() }

// SetPolicy replaces the policy; requests already decided keep their fault.
func (p *Proxy) SetPolicy(pol Policy) {
	if pol == nil {
		pol = None
	}
	p.policy.Store(&pol)
}

// Reset zeroes the counts and restarts Request.N and Request.Elapsed.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n.Store(0)
	p.start = time.Now()
	p.counts = Counts{ByKind: map[Kind]uint64{}, UpstreamStatus: map[int]uint64{}}
}

// Counts returns a copy of the counts so far.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	c.ByKind = make(map[Kind]uint64, len(p.counts.ByKind))
	for k, v := range p.counts.ByKind {
		c.ByKind[k] = v
	}
	c.UpstreamStatus = make(map[int]uint64, len(p.counts.UpstreamStatus))
	for k, v := range p.counts.UpstreamStatus {
		c.UpstreamStatus[k] = v
	}
	return c
}

// Close releases hanging requests and stops the proxy.
func (p *Proxy) Close() {
	p.once.Do(func() { close(p.closing) })
	p.srv.Close()
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	req := Request{N: p.n.Add(1), Elapsed: time.Since(p.start), HTTP: r}
	p.mu.Unlock()
	k := (*p.policy.Load())(req)
	if k < Pass || k >= kinds {
		k = Status500
	}
	p.mu.Lock()
	p.counts.Requests++
	p.counts.ByKind[k]++
	if k.Forwards() {
		p.counts.Forwarded++
	}
	p.mu.Unlock()

	switch k {
	case Pass:
		p.rp.ServeHTTP(w, r)
	case Status500, Status502, Status503, Throttle, ThrottleRetryAfter:
		if k == ThrottleRetryAfter {
			w.Header().Set("Retry-After", strconv.Itoa(int(p.opts.RetryAfter/time.Second)))
		}
		http.Error(w, "faultproxy: "+k.String(), k.status())
	case Hang:
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		reset(w)
	case Reset:
		reset(w)
	case SlowBody:
		p.rp.ServeHTTP(&slowWriter{ResponseWriter: w, chunk: p.opts.SlowChunk, every: p.opts.SlowEvery, done: r.Context().Done(), closing: p.closing}, r)
	case LostReply:
		p.rp.ServeHTTP(&discardWriter{h: http.Header{}}, r)
		reset(w)
	}
}

// reset hijacks the client's connection and closes it with SO_LINGER 0, so the client reads a
// TCP RST ("connection reset by peer") instead of a reply.
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("faultproxy: the ResponseWriter cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return // the client is gone already
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}

// slowWriter passes the status and headers at once and writes the body chunk bytes per every,
// stopping early (and dropping the rest) when the client leaves or the proxy closes.
type slowWriter struct {
	http.ResponseWriter
	chunk   int
	every   time.Duration
	done    <-chan struct{}
	closing <-chan struct{}
	started bool
}

func (s *slowWriter) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		if s.started {
			t := time.NewTimer(s.every)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return written, io.ErrClosedPipe
			case <-s.closing:
				t.Stop()
				return written, io.ErrClosedPipe
			}
		}
		s.started = true
		n := min(s.chunk, len(b))
		m, err := s.ResponseWriter.Write(b[:n])
		written += m
		if err != nil {
			return written, err
		}
		if f, ok := s.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		b = b[n:]
	}
	return written, nil
}

// Flush is a no-op: Write flushes each chunk.
func (s *slowWriter) Flush() {}

// discardWriter takes a reply and drops it.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
