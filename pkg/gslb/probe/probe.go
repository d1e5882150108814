package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// Protocols, equal to the API's healthCheck.protocol values.
const (
	HTTP  = "HTTP"
	HTTPS = "HTTPS"
	TCP   = "TCP"
)

// Defaults (docs/api.md, "Gslb", healthCheck).
const (
	DefaultTimeout = 2 * time.Second
	DefaultPath    = "/"
	DefaultWorkers = 32
	// maxHeaderBytes bounds what a probe reads of a response: the status line and headers.
	maxHeaderBytes = 64 << 10
	userAgent      = "dnsplane-health/1"
	// maxWords bounds Result.Err, in bytes (status.targets[].local.lastError allows 256).
	maxWords = 200
)

// StatusRange is an inclusive range of HTTP status codes.
type StatusRange struct{ Lo, Hi int }

// DefaultStatus is the expected status when none is given: 200 to 399.
var DefaultStatus = []StatusRange{{200, 399}}

// ParseStatus parses healthCheck.expectedStatus: codes ("200") and inclusive ranges
// ("200-399"), each from 100 to 599, low <= high. An empty list is DefaultStatus. Errors name
// the bad entry.
func ParseStatus(ss []string) ([]StatusRange, error) {
	if len(ss) == 0 {
		return DefaultStatus, nil
	}
	out := make([]StatusRange, 0, len(ss))
	for _, s := range ss {
		lo, hi, isRange := strings.Cut(s, "-")
		if !isRange {
			hi = lo
		}
		l, err1 := strconv.Atoi(lo)
		h, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || l < 100 || h > 599 || l > h || len(lo) != 3 || len(hi) != 3 {
			return nil, fmt.Errorf("expected status %q: want a code or low-high range from 100 to 599", s)
		}
		out = append(out, StatusRange{l, h})
	}
	return out, nil
}

// Spec is how to probe (healthCheck, with its defaults applied by the caller or here).
type Spec struct {
	// Protocol is HTTP, HTTPS or TCP.
	Protocol string
	// Port on the target, 1 to 65535.
	Port int
	// Path of the GET; "" is "/".
	Path string
	// Host is the Host header and TLS server name; "" sends the target's address as Host and
	// no SNI.
	Host string
	// Expected status ranges; nil is DefaultStatus.
	Expected []StatusRange
	// Timeout bounds the whole probe (connect, TLS, request, status line and headers); <= 0 is
	// DefaultTimeout.
	Timeout time.Duration
	// InsecureSkipVerify accepts any server certificate (HTTPS).
	InsecureSkipVerify bool
}

// Job is one probe to send: Spec at Addr.
type Job struct {
	Addr netip.Addr
	Spec Spec
}

// Result is one probe's outcome.
type Result struct {
	Job Job
	// OK: the probe passed.
	OK bool
	// Err is why it failed, in words; "" when OK.
	Err string
	// Abstain: the probe could not be attempted from here (cannotAttempt), so it says nothing
	// of the target: no source address of the target's family, the family not supported, or
	// no local route to it. OK is false and Err says why.
	Abstain bool
	// Status is the HTTP status received, 0 for TCP or when none was.
	Status int
	// Start and End are the clock's times around the probe (End - Start is its latency,
	// jitter excluded).
	Start, End time.Time
}

// Prober sends probes. The zero value works: DefaultWorkers, no jitter, the system's roots, the
// real clock. It is safe for concurrent use and holds nothing between calls.
type Prober struct {
	// Workers bounds the probes in flight in one Run; <= 0 is DefaultWorkers.
	Workers int
	// Jitter: each probe of a Run waits a random time in [0, Jitter) first, so that probes of
	// one interval spread out instead of leaving together; <= 0 is none.
	Jitter time.Duration
	// RootCAs verifies HTTPS servers; nil is the system's roots.
	RootCAs *x509.CertPool
	// Clock times the probes and the jitter; nil is the real clock.
	Clock clock.Clock
	// Source is where the probes leave from (--gslb-source-address); the zero value lets the
	// system choose.
	Source gslb.SourceAddrs
}

func (p *Prober) clock() clock.Clock {
	if p.Clock == nil {
		return clock.RealClock{}
	}
	return p.Clock
}

// Run sends every job once, at most Workers at a time, and returns their results in the order
// of jobs. It returns when every probe has ended; cancelling ctx ends them at once (their
// error says "cancelled"). No goroutine outlives it.
func (p *Prober) Run(ctx context.Context, jobs []Job) []Result {
	if len(jobs) == 0 {
		return nil
	}
	workers := p.Workers
	if workers <= 0 {
		workers = DefaultWorkers
	}
	workers = min(workers, len(jobs))
	results := make([]Result, len(jobs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if p.Jitter > 0 && !p.wait(ctx, rand.N(p.Jitter)) {
					results[i] = Result{Job: jobs[i], Err: "cancelled", Start: p.clock().Now(), End: p.clock().Now()}
					continue
				}
				results[i] = p.Probe(ctx, jobs[i])
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// wait waits d on the clock, or until ctx ends (false).
func (p *Prober) wait(ctx context.Context, d time.Duration) bool {
	t := p.clock().NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	}
}

// Probe sends one probe under its Spec's timeout and returns its outcome.
func (p *Prober) Probe(ctx context.Context, job Job) Result {
	timeout := job.Spec.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	res := Result{Job: job, Start: p.clock().Now()}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	status, err := p.send(pctx, job)
	res.End = p.clock().Now()
	res.Status = status
	if err != nil {
		res.Err = words(ctx, pctx, err, timeout)
		if ctx.Err() == nil && p.cannotAttempt(ctx, job, err) {
			res.Abstain, res.Err = true, "cannot probe from here: "+res.Err
		}
		if len(res.Err) > maxWords {
			res.Err = res.Err[:maxWords-3] + "..."
		}
		return res
	}
	if job.Spec.Protocol == TCP {
		res.OK = true
		return res
	}
	expected := job.Spec.Expected
	if expected == nil {
		expected = DefaultStatus
	}
	for _, r := range expected {
		if status >= r.Lo && status <= r.Hi {
			res.OK = true
			return res
		}
	}
	res.Err = "HTTP " + strconv.Itoa(status)
	return res
}

// send dials the target, and for HTTP(S) sends the GET and reads the status line and headers;
// it returns the status.
func (p *Prober) send(ctx context.Context, job Job) (int, error) {
	s := job.Spec
	switch s.Protocol {
	case HTTP, HTTPS, TCP:
	default:
		return 0, fmt.Errorf("unknown protocol %q", s.Protocol)
	}
	if !job.Addr.IsValid() || s.Port < 1 || s.Port > 65535 {
		return 0, fmt.Errorf("bad target %s port %d", job.Addr, s.Port)
	}
	addr := netip.AddrPortFrom(job.Addr.Unmap(), uint16(s.Port)).String()
	conn, err := p.Source.Dialer("tcp", addr).DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if s.Protocol == TCP {
		return 0, nil
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	host := s.Host
	if host == "" {
		host = addr
	}
	if s.Protocol == HTTPS {
		serverName := s.Host
		if serverName == "" {
			serverName = job.Addr.Unmap().String() // an address: no SNI, verified against IP SANs
		}
		tc := tls.Client(conn, &tls.Config{
			ServerName:         serverName,
			InsecureSkipVerify: s.InsecureSkipVerify,
			RootCAs:            p.RootCAs,
			MinVersion:         tls.VersionTLS12,
		})
		if err := tc.HandshakeContext(ctx); err != nil {
			return 0, &tlsError{err}
		}
		conn = tc
	}
	path := s.Path
	if path == "" {
		path = DefaultPath
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: " + userAgent + "\r\nAccept: */*\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.LimitReader(conn, maxHeaderBytes)), nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, errClosed
		}
		return 0, err
	}
	return resp.StatusCode, nil
}

var errClosed = errors.New("connection closed before the response")

// cannotAttempt reports whether err, the failed dial of job, says that the probe cannot be
// made from here, rather than that the target failed it:
//   - EADDRNOTAVAIL or EAFNOSUPPORT: the source address (--gslb-source-address) is on no
//     interface, or this host has no address or no support of the target's family;
//   - ENETUNREACH or EHOSTUNREACH, when this host has no route to the target either: a UDP
//     connect from the same source, which looks the route up and sends nothing, fails with one
//     of these four. When it succeeds, the error came from the network (an ICMP unreachable
//     from a router in front of a dead target), and the probe failed.
func (p *Prober) cannotAttempt(ctx context.Context, job Job, err error) bool {
	var op *net.OpError
	switch {
	case !errors.As(err, &op) || op.Op != "dial":
		return false
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EAFNOSUPPORT):
		return true
	case !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EHOSTUNREACH):
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	addr := netip.AddrPortFrom(job.Addr.Unmap(), uint16(job.Spec.Port)).String()
	conn, uerr := p.Source.Dialer("udp", addr).DialContext(cctx, "udp", addr)
	if uerr == nil {
		_ = conn.Close()
		return false
	}
	return errors.Is(uerr, syscall.ENETUNREACH) || errors.Is(uerr, syscall.EHOSTUNREACH) ||
		errors.Is(uerr, syscall.EADDRNOTAVAIL) || errors.Is(uerr, syscall.EAFNOSUPPORT)
}

type tlsError struct{ err error }

func (e *tlsError) Error() string { return e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// words says err in a few words for status.targets[].local.lastError: "timeout after 2s",
// "connect: connection refused", "TLS: certificate signed by unknown authority", ...
func words(parent, pctx context.Context, err error, timeout time.Duration) string {
	switch {
	case parent.Err() != nil:
		return "cancelled"
	case errors.Is(pctx.Err(), context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout after " + timeout.String()
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "timeout after " + timeout.String()
	}
	var te *tlsError
	if errors.As(err, &te) {
		var (
			unknown  x509.UnknownAuthorityError
			hostErr  x509.HostnameError
			invalid  x509.CertificateInvalidError
			verifErr *tls.CertificateVerificationError
		)
		switch {
		case errors.As(err, &unknown):
			return "TLS: certificate signed by unknown authority"
		case errors.As(err, &hostErr):
			return "TLS: certificate is not valid for " + hostErr.Host
		case errors.As(err, &invalid):
			return "TLS: " + invalid.Error()
		case errors.As(err, &verifErr):
			return "TLS: " + verifErr.Err.Error()
		case errors.Is(err, io.EOF):
			return "TLS: connection closed during the handshake"
		}
		return "TLS: " + short(err)
	}
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"
	prefix := ""
	if dial {
		prefix = "connect: "
	}
	for _, e := range []struct {
		errno syscall.Errno
		msg   string
	}{
		{syscall.ECONNREFUSED, "connection refused"}, {syscall.ECONNRESET, "connection reset by peer"},
		{syscall.EHOSTUNREACH, "no route to host"}, {syscall.ENETUNREACH, "network is unreachable"},
		{syscall.EADDRNOTAVAIL, "cannot assign requested address"}, {syscall.EAFNOSUPPORT, "address family not supported"},
	} {
		if errors.Is(err, e.errno) {
			return prefix + e.msg
		}
	}
	if errors.Is(err, errClosed) {
		return errClosed.Error()
	}
	return prefix + short(err)
}

// short is err's innermost message (the syscall's words, not the addresses around them).
func short(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}
