package dnsclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// ErrNotAuthoritative: the server answered, but not authoritatively (AA clear), or with an
// rcode other than NOERROR.
var ErrNotAuthoritative = errors.New("answer is not authoritative")

// Client sends single DNS queries. The zero value is ready: 2 s per attempt.
type Client struct {
	// Timeout bounds each attempt (UDP, then TCP), a time.Duration; default 2s.
	Timeout time.Duration
}

func (c Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return 2 * time.Second
	}
	return c.Timeout
}

// Query asks server (host:port) for name and type over UDP, retrying over TCP when the UDP
// answer is truncated or UDP fails. It returns the response only if its ID, question and
// rcode (NOERROR or NXDOMAIN) fit the query.
func (c Client) Query(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	return c.query(ctx, server, name, qtype, false)
}

// query is Query, with the DO bit (RFC 3225) set when do is true.
func (c Client) query(ctx context.Context, server, name string, qtype uint16, do bool) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.SetEdns0(1232, do)
	q.RecursionDesired = false
	var firstErr error
	for _, netw := range []string{"udp", "tcp"} {
		cl := &dns.Client{Net: netw, Timeout: c.timeout()}
		actx, cancel := context.WithTimeout(ctx, c.timeout())
		resp, _, err := cl.ExchangeContext(actx, q, server)
		cancel()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if resp.Truncated && netw == "udp" {
			continue
		}
		if err := check(q, resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	return nil, &TransportError{
		Msg: fmt.Sprintf("query %s %s at %s: %s", name, dns.TypeToString[qtype], server, describe(firstErr, c.timeout())),
		Err: firstErr,
	}
}

// TransportError is a query that got no usable answer over UDP nor TCP. Its text names the
// question, the server and the cause, but never the local socket address (a random port on
// every query) nor a time, so it is the same from one attempt to the next and may go into a
// condition message. Unwrap returns the first attempt's error, for errors.Is and errors.As
// (context.DeadlineExceeded, syscall.ECONNREFUSED, ...).
type TransportError struct {
	// Msg is the stable text.
	Msg string
	// Err is the first attempt's error.
	Err error
}

// Error implements error.
func (e *TransportError) Error() string { return e.Msg }

// Unwrap returns the first attempt's error.
func (e *TransportError) Unwrap() error { return e.Err }

// describe names the cause of a failed exchange without addresses: a timeout (with the
// per-attempt timeout), a refused or reset connection, else the innermost error of a
// *net.OpError (which is where Go puts the addresses), else the error's own text.
func describe(err error, timeout time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return fmt.Sprintf("no answer within %s", timeout)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		inner := op.Err
		var sys *os.SyscallError
		if errors.As(inner, &sys) {
			inner = sys.Err
		}
		return op.Op + ": " + inner.Error()
	}
	return err.Error()
}

func check(q, resp *dns.Msg) error {
	if resp.Id != q.Id {
		return fmt.Errorf("answer ID %d does not match query ID %d", resp.Id, q.Id)
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, q.Question[0].Name) ||
		resp.Question[0].Qtype != q.Question[0].Qtype {
		return errors.New("answer is for another question")
	}
	return nil
}

// SOA asks server for the zone's SOA and returns nil only when the answer is authoritative
// (AA set, NOERROR) and holds the zone's SOA; otherwise an error wrapping ErrNotAuthoritative
// or the transport error.
func (c Client) SOA(ctx context.Context, server, zone string) error {
	_, err := c.Serial(ctx, server, zone)
	return err
}

// Serial asks server (host:port) for the zone's SOA and returns its serial (RFC 1035 §3.3.13,
// a 32-bit sequence number compared by RFC 1982 arithmetic), with the checks of SOA: an
// answer that is not authoritative, not NOERROR or holds no SOA of the zone wraps
// ErrNotAuthoritative; a query without a usable answer is a *TransportError.
func (c Client) Serial(ctx context.Context, server, zone string) (uint32, error) {
	serial, _, err := c.soa(ctx, server, zone, false)
	return serial, err
}

// SignedSerial is Serial asked with the DO bit set (RFC 3225): it also returns the RRSIGs over
// the zone's SOA that the answer carries (none from a server that does not sign the zone).
func (c Client) SignedSerial(ctx context.Context, server, zone string) (uint32, []*dns.RRSIG, error) {
	serial, resp, err := c.soa(ctx, server, zone, true)
	if err != nil {
		return 0, nil, err
	}
	var sigs []*dns.RRSIG
	for _, rr := range resp.Answer {
		if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == dns.TypeSOA && strings.EqualFold(s.Hdr.Name, dns.Fqdn(zone)) {
			sigs = append(sigs, s)
		}
	}
	return serial, sigs, nil
}

// soa asks server for zone's SOA (with DO when do is true) and returns its serial and the
// answer, with Serial's checks.
func (c Client) soa(ctx context.Context, server, zone string, do bool) (uint32, *dns.Msg, error) {
	resp, err := c.query(ctx, server, zone, dns.TypeSOA, do)
	if err != nil {
		return 0, nil, err
	}
	if resp.Rcode != dns.RcodeSuccess || !resp.Authoritative {
		return 0, nil, fmt.Errorf("SOA %s at %s: rcode %s, AA %t: %w", zone, server, dns.RcodeToString[resp.Rcode], resp.Authoritative, ErrNotAuthoritative)
	}
	for _, rr := range resp.Answer {
		if soa, ok := rr.(*dns.SOA); ok && strings.EqualFold(soa.Hdr.Name, dns.Fqdn(zone)) {
			return soa.Serial, resp, nil
		}
	}
	return 0, nil, fmt.Errorf("SOA %s at %s: no SOA in the answer: %w", zone, server, ErrNotAuthoritative)
}

// SOAAny checks the zone's SOA at the first of servers that answers authoritatively; servers
// are host:port, or host names, which get port 53. It returns the last error when none does.
func (c Client) SOAAny(ctx context.Context, servers []string, zone string) error {
	if len(servers) == 0 {
		return fmt.Errorf("SOA %s: no name servers to ask: %w", zone, ErrNotAuthoritative)
	}
	var last error
	for _, s := range servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.TrimSuffix(s, "."), "53")
		}
		if last = c.SOA(ctx, s, zone); last == nil {
			return nil
		}
	}
	return last
}
