package dnsclient

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/miekg/dns"
)

// Addresses asks server (host:port) for the A and AAAA records of name, with recursion desired,
// so that a resolver (--dns-resolver) follows delegations and CNAMEs while an authoritative
// server (DNS_ADDRESS) answers from its own zones. It returns the addresses of the answer
// sections, IPv4 first; none, with a nil error, when the server answers NOERROR without
// addresses or NXDOMAIN. Errors are transport errors, or an answer with another rcode
// (REFUSED, SERVFAIL), wrapping ErrNotAuthoritative. Each attempt is bounded by Timeout.
func (c Client) Addresses(ctx context.Context, server, name string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		resp, err := c.exchangeRD(ctx, server, name, qtype)
		if err != nil {
			return nil, err
		}
		if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
			return nil, fmt.Errorf("%s %s at %s: rcode %s: %w", name, dns.TypeToString[qtype], server, dns.RcodeToString[resp.Rcode], ErrNotAuthoritative)
		}
		for _, rr := range resp.Answer {
			switch a := rr.(type) {
			case *dns.A:
				if ip, ok := netip.AddrFromSlice(a.A); ok {
					out = append(out, ip.Unmap())
				}
			case *dns.AAAA:
				if ip, ok := netip.AddrFromSlice(a.AAAA); ok {
					out = append(out, ip)
				}
			}
		}
	}
	return out, nil
}

// exchangeRD sends one recursion-desired query over UDP, then TCP when the UDP answer is
// truncated or UDP fails, and checks that the answer fits the question.
func (c Client) exchangeRD(ctx context.Context, server, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.SetEdns0(1232, false)
	var firstErr error
	for _, netw := range []string{"udp", "tcp"} {
		actx, cancel := context.WithTimeout(ctx, c.timeout())
		resp, _, err := (&dns.Client{Net: netw, Timeout: c.timeout()}).ExchangeContext(actx, q, server)
		cancel()
		switch {
		case err != nil:
			if firstErr == nil {
				firstErr = err
			}
			continue
		case resp.Truncated && netw == "udp":
			continue
		}
		if err := check(q, resp); err != nil {
			return nil, err
		}
		return resp, nil
	}
	return nil, fmt.Errorf("query %s %s at %s: %w", name, dns.TypeToString[qtype], server, firstErr)
}
