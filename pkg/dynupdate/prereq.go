package dynupdate

import (
	"slices"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
)

// CheckPrereqs evaluates an UPDATE's prerequisites (Update.Prereqs, shapes already checked by
// Parse) against the records r and returns dns.RcodeSuccess or the rcode of the first that
// fails (RFC 2136 §3.2.5):
//   - class ANY, type ANY (name is in use, §2.4.4): NXDOMAIN when the name has no RRset;
//   - class ANY, type T (RRset exists, value independent, §2.4.1): NXRRSET when absent;
//   - class NONE, type ANY (name is not in use, §2.4.5): YXDOMAIN when it has an RRset;
//   - class NONE, type T (RRset does not exist, §2.4.3): YXRRSET when present;
//   - class IN (RRset exists, value dependent, §2.4.2): the RRs of each name and type,
//     together, must equal that RRset's values exactly (TTL ignored), else NXRRSET.
func CheckPrereqs(prereqs []dns.RR, r Records) int {
	type key struct {
		name string
		typ  uint16
	}
	var order []key
	want := map[key][]string{}
	for _, rr := range prereqs {
		h := rr.Header()
		name := dnswire.Fqdn(h.Name)
		sets := r[name]
		switch h.Class {
		case dns.ClassANY:
			if h.Rrtype == dns.TypeANY {
				if len(sets) == 0 {
					return dns.RcodeNameError
				}
			} else if _, ok := sets[h.Rrtype]; !ok {
				return dns.RcodeNXRrset
			}
		case dns.ClassNONE:
			if h.Rrtype == dns.TypeANY {
				if len(sets) > 0 {
					return dns.RcodeYXDomain
				}
			} else if _, ok := sets[h.Rrtype]; ok {
				return dns.RcodeYXRrset
			}
		default:
			v, _ := Value(rr)
			k := key{name, h.Rrtype}
			if _, seen := want[k]; !seen {
				order = append(order, k)
			}
			if !slices.Contains(want[k], v) {
				want[k] = append(want[k], v)
			}
		}
	}
	for _, k := range order {
		vs := want[k]
		slices.Sort(vs)
		if !slices.Equal(vs, r[k.name][k.typ].Values) {
			return dns.RcodeNXRrset
		}
	}
	return dns.RcodeSuccess
}
