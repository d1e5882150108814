package gslb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// ErrPeerTimeout: the peer gave no acceptable answer within Querier.Timeout (or before the
// caller's context deadline). A silent peer has no healthy targets.
var ErrPeerTimeout = errors.New("gslb peer timed out")

// ErrBadAnswer: the peer answered, but the answer was rejected; the wrapping error says why
// (not a response, wrong ID, wrong question name or type, rcode other than NOERROR/NXDOMAIN,
// truncated over TCP, malformed, oversized).
var ErrBadAnswer = errors.New("bad answer from gslb peer")

const (
	defaultTimeout    = 2 * time.Second
	defaultMaxAnswers = 64
	// ednsBufSize is the UDP payload size we advertise (RFC 6891 §6.2.5; 1232 bytes is the
	// DNS Flag Day 2020 value that avoids IP fragmentation).
	ednsBufSize = 1232
)

// Querier asks peers for their local targets. The zero value is usable: Timeout 2s,
// MaxAnswers 64. It holds no state between queries and is safe for concurrent use.
type Querier struct {
	// Timeout bounds one Query to one peer (--gslb-peer-timeout), a time.Duration: the A and
	// AAAA questions, each with its UDP try and TCP fallback, together. <= 0 means 2s.
	Timeout time.Duration
	// MaxAnswers is the most A plus AAAA records (of any owner) one answer message may hold;
	// a message with more is rejected as oversized (ErrBadAnswer). <= 0 means 64.
	MaxAnswers int
	// Source is where the queries leave from (--gslb-source-address); the zero value lets
	// the system choose.
	Source SourceAddrs
}

func (q Querier) timeout() time.Duration {
	if q.Timeout <= 0 {
		return defaultTimeout
	}
	return q.Timeout
}

func (q Querier) maxAnswers() int {
	if q.MaxAnswers <= 0 {
		return defaultMaxAnswers
	}
	return q.MaxAnswers
}

// Query returns the A and AAAA targets that the DNS server at addr (host:port) serves for name
// (usually LocalTargetsName(host)): canonical address strings (netip.Addr.String), IPv4 before
// IPv6, sorted by address, deduplicated. NXDOMAIN and NODATA mean no targets: (nil, nil).
//
// It asks one A and one AAAA question, concurrently, each over UDP with EDNS0 (RFC 6891,
// buffer 1232 bytes, RD clear) and again over TCP when the UDP answer is truncated (TC set;
// RFC 7766 §5). Timeout bounds all of it, and cancelling ctx stops it at once.
//
// An answer is accepted only if (header and question checks per RFC 1035 §4.1.1):
//   - it came from the queried server: miekg/dns's Client dials a connected UDP socket, so the
//     kernel drops datagrams from any other address and port; over TCP it is the connection;
//   - its ID matches ours: over UDP miekg/dns discards datagrams with another ID and keeps
//     reading until the deadline (so a server that only sends wrong IDs ends in
//     ErrPeerTimeout), over TCP it fails with dns.ErrId (ErrBadAnswer); Query checks the ID
//     again;
//   - QR (response) is set, opcode is QUERY, rcode is NOERROR or NXDOMAIN;
//   - it holds exactly our question: one entry, same name (case-insensitive), type and class;
//   - it holds at most MaxAnswers A/AAAA records.
//
// Of the answer section only records of the asked type owned by the asked name
// (case-insensitive) count, and of their addresses only the usable ones (UsableTarget: an
// unspecified, broadcast, multicast or link-local address is dropped); records for other names and of other types (e.g. a CNAME, which
// is not followed) are ignored.
//
// Errors wrap ErrPeerTimeout on timeout, ErrBadAnswer with the reason for a rejected answer,
// or the transport error (e.g. connection refused) or ctx.Err(); each names the query type
// and the peer. When both questions fail, both errors are joined (errors.Is sees either).
func (q Querier) Query(ctx context.Context, addr, name string) ([]string, error) {
	qname := dnswire.Fqdn(name)
	if _, ok := dns.IsDomainName(qname); !ok || qname == "." {
		return nil, fmt.Errorf("query gslb peer %s: %q is not a domain name", addr, name)
	}
	ctx, cancel := context.WithTimeout(ctx, q.timeout())
	defer cancel()

	qtypes := [2]uint16{dns.TypeA, dns.TypeAAAA}
	var (
		wg      sync.WaitGroup
		targets [2][]netip.Addr
		errs    [2]error
	)
	for i, qtype := range qtypes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			targets[i], errs[i] = q.ask(ctx, addr, qname, qtype)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs[0], errs[1]); err != nil {
		return nil, err
	}
	all := append(targets[0], targets[1]...)
	if len(all) == 0 {
		return nil, nil
	}
	out := make([]string, 0, len(all))
	for _, a := range all {
		if UsableTarget(a) {
			out = append(out, a.String())
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return sortTargets(out), nil
}

// QueryTXT returns the TXT records that the DNS server at addr (host:port) serves for name
// (usually health.VerdictsName(host)): each record's character-strings, in answer order.
// NXDOMAIN and NODATA mean no records: (nil, nil), which for a verdict record means the peer
// runs the Gslb without a health check (not voting). Decode the result with health.DecodeTXT
// (health imports this package, so the decoding cannot live here).
//
// It asks one TXT question with Query's transport (UDP with EDNS0, TCP on truncation, Timeout
// bounding both, ctx cancelling at once) and Query's answer checks (same server, ID, QR,
// opcode QUERY, rcode NOERROR or NXDOMAIN, exactly our question). Of the answer section only
// TXT records of class IN owned by name (case-insensitive) count. The answer is refused as
// oversized (ErrBadAnswer) when it holds more than MaxAnswers TXT records of any owner, or when
// the counted records hold more than MaxTXTBytes bytes of character-strings.
//
// Errors: as Query's (ErrPeerTimeout, ErrBadAnswer, the transport error or ctx.Err()), naming
// the query and the peer.
func (q Querier) QueryTXT(ctx context.Context, addr, name string) ([][]string, error) {
	qname := dnswire.Fqdn(name)
	if _, ok := dns.IsDomainName(qname); !ok || qname == "." {
		return nil, fmt.Errorf("query gslb peer %s: %q is not a domain name", addr, name)
	}
	ctx, cancel := context.WithTimeout(ctx, q.timeout())
	defer cancel()
	var out [][]string
	err := q.askWith(ctx, addr, qname, dns.TypeTXT, func(query, resp *dns.Msg) (err error) {
		out, err = acceptTXT(query, resp, q.maxAnswers())
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MaxTXTBytes bounds the character-strings of the TXT records QueryTXT accepts for the asked
// name, in bytes (a verdict record is at most 1,024: health.MaxRecordLen).
const MaxTXTBytes = 4096

// acceptTXT checks resp against the query (checkHeader) and returns the character-strings of
// the TXT records owned by the asked name.
func acceptTXT(query, resp *dns.Msg, maxAnswers int) ([][]string, error) {
	qq := query.Question[0]
	nx, err := checkHeader(query, resp)
	if err != nil || nx {
		return nil, err // NXDOMAIN: no records.
	}
	if err := checkCount(resp, maxAnswers, "TXT", dns.TypeTXT); err != nil {
		return nil, err
	}
	var (
		out   [][]string
		bytes int
	)
	for _, rr := range resp.Answer {
		txt, ok := rr.(*dns.TXT)
		if !ok || txt.Hdr.Class != dns.ClassINET || !strings.EqualFold(txt.Hdr.Name, qq.Name) {
			continue // another name or type: ignored, CNAMEs are not followed.
		}
		for _, s := range txt.Txt {
			bytes += len(s)
		}
		if bytes > MaxTXTBytes {
			return nil, fmt.Errorf("oversized: more than %d bytes of TXT: %w", MaxTXTBytes, ErrBadAnswer)
		}
		out = append(out, txt.Txt)
	}
	return out, nil
}

// ask sends one question over UDP, then over TCP if the UDP answer is truncated, and returns
// the addresses of the accepted answer.
func (q Querier) ask(ctx context.Context, addr, qname string, qtype uint16) ([]netip.Addr, error) {
	var addrs []netip.Addr
	err := q.askWith(ctx, addr, qname, qtype, func(query, resp *dns.Msg) (err error) {
		addrs, err = acceptAddrs(query, resp, q.maxAnswers())
		return err
	})
	return addrs, err
}

// askWith sends one question over UDP, then over TCP if the UDP answer is truncated, and
// hands the answer to accept, which checks it and keeps what it needs; accept's error is
// wrapped with the question, peer and transport.
func (q Querier) askWith(ctx context.Context, addr, qname string, qtype uint16, accept func(query, resp *dns.Msg) error) error {
	msg := new(dns.Msg)
	msg.SetQuestion(qname, qtype)
	msg.RecursionDesired = false
	msg.SetEdns0(ednsBufSize, false)

	what := fmt.Sprintf("query %s %s at gslb peer %s", qname, dns.TypeToString[qtype], addr)
	for _, network := range []string{"udp", "tcp"} {
		resp, err := exchange(ctx, network, msg, addr, q.Source)
		if err != nil {
			return fmt.Errorf("%s over %s: %w", what, network, err)
		}
		if resp.Truncated {
			if network == "udp" {
				continue // RFC 7766 §5: retry over TCP.
			}
			return fmt.Errorf("%s over tcp: truncated: %w", what, ErrBadAnswer)
		}
		if err := accept(msg, resp); err != nil {
			return fmt.Errorf("%s over %s: %w", what, network, err)
		}
		return nil
	}
	panic("unreachable")
}

// exchange runs one miekg/dns exchange from src (SourceAddrs.Dialer) bounded by ctx's
// deadline and cancellation, and maps its failures to ErrPeerTimeout, ErrBadAnswer or the transport error.
func exchange(ctx context.Context, network string, msg *dns.Msg, addr string, src SourceAddrs) (*dns.Msg, error) {
	deadline, _ := ctx.Deadline() // always set by Query
	client := &dns.Client{Net: network, Timeout: time.Until(deadline), UDPSize: ednsBufSize, Dialer: src.Dialer(network, addr)}
	if client.Timeout <= 0 {
		return nil, ErrPeerTimeout
	}
	conn, err := client.DialContext(ctx, addr)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer conn.Close()
	// The read deadline only follows ctx's deadline; closing the connection also ends the
	// exchange when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	resp, _, err := client.ExchangeWithConnContext(ctx, msg, conn)
	switch {
	case err == nil:
		return resp, nil
	case errors.Is(err, dns.ErrId):
		return nil, fmt.Errorf("answer ID does not match: %w", ErrBadAnswer)
	case resp != nil && resp.Truncated && network == "udp":
		// A truncated datagram may be cut mid-record and fail to unpack; TC alone sends the
		// caller to TCP.
		return resp, nil
	case resp != nil && ctx.Err() == nil:
		// miekg/dns returns the message with the error when it could not unpack it.
		return nil, fmt.Errorf("malformed answer: %v: %w", err, ErrBadAnswer)
	}
	return nil, classify(ctx, err)
}

func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrPeerTimeout, ctxErr)
		}
		return ctxErr
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return fmt.Errorf("%w: %w", ErrPeerTimeout, err)
	}
	return err
}

// checkHeader checks resp against the query (RFC 1035 §4.1.1): ID, QR, opcode, exactly the
// asked question, and rcode NOERROR or NXDOMAIN (nxdomain true).
func checkHeader(query, resp *dns.Msg) (nxdomain bool, err error) {
	qq := query.Question[0]
	if resp.Id != query.Id {
		return false, fmt.Errorf("answer ID %d does not match query ID %d: %w", resp.Id, query.Id, ErrBadAnswer)
	}
	if !resp.Response {
		return false, fmt.Errorf("not a response (QR clear): %w", ErrBadAnswer)
	}
	if resp.Opcode != dns.OpcodeQuery {
		return false, fmt.Errorf("opcode %s, want QUERY: %w", dns.OpcodeToString[resp.Opcode], ErrBadAnswer)
	}
	if len(resp.Question) != 1 {
		return false, fmt.Errorf("%d questions in the answer, want 1: %w", len(resp.Question), ErrBadAnswer)
	}
	rq := resp.Question[0]
	if !strings.EqualFold(rq.Name, qq.Name) {
		return false, fmt.Errorf("answer is for name %q, asked %q: %w", rq.Name, qq.Name, ErrBadAnswer)
	}
	if rq.Qtype != qq.Qtype || rq.Qclass != qq.Qclass {
		return false, fmt.Errorf("answer is for %s %s, asked %s %s: %w", dns.ClassToString[rq.Qclass], dns.TypeToString[rq.Qtype],
			dns.ClassToString[qq.Qclass], dns.TypeToString[qq.Qtype], ErrBadAnswer)
	}
	switch resp.Rcode {
	case dns.RcodeSuccess:
		return false, nil
	case dns.RcodeNameError:
		return true, nil
	}
	return false, fmt.Errorf("rcode %s: %w", dns.RcodeToString[resp.Rcode], ErrBadAnswer)
}

// acceptAddrs checks resp against the query (checkHeader) and returns the addresses of the
// records of the asked type owned by the asked name.
func acceptAddrs(query, resp *dns.Msg, maxAnswers int) ([]netip.Addr, error) {
	qq := query.Question[0]
	nx, err := checkHeader(query, resp)
	if err != nil || nx {
		return nil, err // NXDOMAIN: no targets.
	}
	if err := checkCount(resp, maxAnswers, "A/AAAA", dns.TypeA, dns.TypeAAAA); err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	for _, rr := range resp.Answer {
		h := rr.Header()
		if h.Rrtype != qq.Qtype || h.Class != dns.ClassINET || !strings.EqualFold(h.Name, qq.Name) {
			continue // another name or type: ignored, CNAMEs are not followed.
		}
		var (
			a  netip.Addr
			ok bool
		)
		switch r := rr.(type) {
		case *dns.A:
			a, ok = netip.AddrFromSlice(r.A)
			a = a.Unmap() // miekg/dns may hold an IPv4 address in 16 bytes
			ok = ok && a.Is4()
		case *dns.AAAA:
			a, ok = netip.AddrFromSlice(r.AAAA)
			ok = ok && a.Is6()
		}
		if ok {
			addrs = append(addrs, a)
		}
	}
	return addrs, nil
}

// checkCount refuses resp as oversized (ErrBadAnswer) when its answer section holds more than
// maxAnswers records of types, of any owner; what names the types in the error.
func checkCount(resp *dns.Msg, maxAnswers int, what string, types ...uint16) error {
	n := 0
	for _, rr := range resp.Answer {
		if slices.Contains(types, rr.Header().Rrtype) {
			n++
		}
	}
	if n > maxAnswers {
		return fmt.Errorf("oversized: %d %s records, at most %d allowed: %w", n, what, maxAnswers, ErrBadAnswer)
	}
	return nil
}
