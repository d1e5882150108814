package dnsserver

import (
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// fit makes the response resp at most size bytes on the wire (at least 512,
// RFC 6891 §6.2.5), and returns true when it dropped records. It packs
// uncompressed when that fits, else compressed, and then keeps RRsets whole:
//   - the answer and authority sections are required: an RRset of theirs
//     that does not fit sets TC, and the response keeps the RRsets before
//     it and nothing after (RFC 2181 §9);
//   - the additional section is optional, except the in-domain glue of a
//     referral: an RRset that does not fit is dropped with those after it,
//     without TC ("the TC bit should not be set merely because some extra
//     information could have been included", RFC 2181 §9), but in-domain
//     glue that does not fit sets TC (RFC 9471 §3 requires all glue of
//     in-domain name servers: addresses at or below the cut). A referral's
//     other addresses (sibling glue, name servers elsewhere in the zone) are
//     optional (RFC 9471 §3.2) and come after its in-domain glue
//     (appendGlue), so they go first;
//   - the OPT record is always kept (RFC 6891 §6.1.1).
//
// miekg/dns's Msg.Truncate cannot tell required records from optional ones
// and sets TC whenever it drops one. A referral is told by an NS RRset in
// the authority section, which only referrals carry here (resolveWith); its
// owner is the cut.
func fit(resp *dns.Msg, size int) bool {
	size = max(size, dns.MinMsgSize)
	resp.Compress = false
	if resp.Len() <= size {
		return false
	}
	resp.Compress = true
	if resp.Len() <= size {
		return false
	}
	cut := "" // the referral's, else none
	for _, rr := range resp.Ns {
		if rr.Header().Rrtype == dns.TypeNS {
			cut = rr.Header().Name
		}
	}
	var opt []dns.RR
	var extra []dns.RR
	for _, rr := range resp.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			opt = append(opt, rr)
		} else {
			extra = append(extra, rr)
		}
	}
	answer, ns := resp.Answer, resp.Ns
	resp.Answer, resp.Ns, resp.Extra = nil, nil, opt
	// add appends set to *sec when the response still fits, and reports
	// whether it did.
	add := func(sec *[]dns.RR, set []dns.RR) bool {
		n := len(*sec)
		*sec = append(*sec, set...)
		if resp.Len() <= size {
			return true
		}
		*sec = (*sec)[:n]
		return false
	}
	for _, sec := range []struct {
		dst      *[]dns.RR
		rrs      []dns.RR
		required bool
	}{{&resp.Answer, answer, true}, {&resp.Ns, ns, true}, {&resp.Extra, extra, false}} {
		for _, set := range rrsets(sec.rrs) {
			if !add(sec.dst, set) {
				glue := cut != "" && sec.dst == &resp.Extra && dnswire.IsSubdomain(set[0].Header().Name, cut)
				resp.Truncated = resp.Truncated || sec.required || glue
				resp.Extra = moveOPTLast(resp.Extra)
				return true
			}
		}
	}
	resp.Extra = moveOPTLast(resp.Extra)
	return false
}

// rrsets splits a section into its RRsets: runs of records of one owner
// (without case), type and class, as resolveWith appends them, each with the RRSIGs that
// follow it and cover its type (Server.sign puts them there), so that truncation keeps or
// drops an RRset with its signatures.
func rrsets(rrs []dns.RR) [][]dns.RR {
	var out [][]dns.RR
	for i := 0; i < len(rrs); {
		h := rrs[i].Header()
		j := i + 1
		for j < len(rrs) && sameSet(h, rrs[j]) {
			j++
		}
		out = append(out, rrs[i:j])
		i = j
	}
	return out
}

// sameSet says whether rr belongs to the RRset of header h: of its owner, type and class, or
// an RRSIG of its owner covering its type.
func sameSet(h *dns.RR_Header, rr dns.RR) bool {
	g := rr.Header()
	if g.Class != h.Class || !strings.EqualFold(g.Name, h.Name) {
		return false
	}
	if sig, ok := rr.(*dns.RRSIG); ok && h.Rrtype != dns.TypeRRSIG {
		return sig.TypeCovered == h.Rrtype
	}
	return g.Rrtype == h.Rrtype
}

// moveOPTLast returns extra with its OPT record (placed first while fit
// adds the others) at the end, where responders conventionally put it.
func moveOPTLast(extra []dns.RR) []dns.RR {
	if len(extra) < 2 || extra[0].Header().Rrtype != dns.TypeOPT {
		return extra
	}
	return append(slices.Clone(extra[1:]), extra[0])
}
