package dnstest

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Edge is an edge zone's DNS server as a GSLB test writes it: the SOA of Zone, and for Child
// and every name below it the referral naming one name server ns-<geo>.<Child> per Glue entry
// (in the order of the geo tags) with its address as glue. Any other question is REFUSED, and
// so is the referral while Refuse is set; the SOA is answered always.
type Edge struct {
	Zone   string                // the edge zone, e.g. "edge.test"
	Child  string                // the delegated GSLB zone, e.g. "gslb.edge.test"
	Glue   map[string]netip.Addr // geo tag -> the address of ns-<geo>.<Child>
	Refuse *atomic.Bool          // nil or unset: the referral is answered
}

// ServeEdge serves e over UDP on a free port of host until the test ends and returns its
// host:port (HandleUDP).
func ServeEdge(t testing.TB, host string, e Edge) string {
	t.Helper()
	return HandleUDP(t, host, e.Handler())
}

// Handler answers as e says.
func (e Edge) Handler() dns.HandlerFunc {
	zone, child := dns.Fqdn(strings.ToLower(e.Zone)), dns.Fqdn(strings.ToLower(e.Child))
	return func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		switch name := strings.ToLower(q.Question[0].Name); {
		case name == zone && q.Question[0].Qtype == dns.TypeSOA:
			m.Authoritative = true
			m.Answer = append(m.Answer, mustRR(zone+" 60 IN SOA ns1."+zone+" hostmaster."+zone+" 1 60 60 600 60"))
		case e.Refuse != nil && e.Refuse.Load():
			m.Rcode = dns.RcodeRefused
		case dns.IsSubDomain(child, name):
			for _, geo := range slices.Sorted(maps.Keys(e.Glue)) {
				ns := "ns-" + geo + "." + child
				m.Ns = append(m.Ns, mustRR(child+" 60 IN NS "+ns))
				m.Extra = append(m.Extra, mustRR(ns+" 60 IN A "+e.Glue[geo].String()))
			}
		default:
			m.Rcode = dns.RcodeRefused
		}
		_ = w.WriteMsg(m)
	}
}

// mustRR parses s, a record the test package itself writes.
func mustRR(s string) dns.RR {
	rr, err := dns.NewRR(s)
	if err != nil {
		panic("dnstest: " + err.Error())
	}
	return rr
}
