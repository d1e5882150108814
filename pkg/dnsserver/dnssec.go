package dnsserver

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// signing is the set of zones the server signs, by origin. It is never modified once
// published (SetSigning publishes a new one), so that answers and caches derived from it may be
// keyed by its pointer.
type signing struct {
	zones map[string]*dnssec.Policy
}

// SetSigning makes the server sign the zone origin with p (nil: serve it unsigned): answers to
// requests with the DO bit carry RRSIGs, the DNSKEY RRset at the apex and NSEC, NSEC3 or
// compact denial (docs/dnssec.md, "Online signing in the embedded server"). A policy without an
// Active key for the DNSKEY RRset and one for the zone is refused and the zone keeps its
// previous policy. Cached answers of the previous policy are dropped.
func (s *Server) SetSigning(origin string, p *dnssec.Policy) error {
	origin = dnswire.LookupName(dnswire.Fqdn(origin))
	if p != nil {
		if err := p.Check(); err != nil {
			return err
		}
		if !dnswire.IsSubdomain(p.Keys.Zone, origin) || !dnswire.IsSubdomain(origin, p.Keys.Zone) {
			return fmt.Errorf("dnsserver: key set of %s given for %s", p.Keys.Zone, origin)
		}
	}
	s.signMu.Lock()
	defer s.signMu.Unlock()
	next := &signing{zones: map[string]*dnssec.Policy{}}
	if cur := s.signing.Load(); cur != nil {
		maps.Copy(next.zones, cur.zones)
	}
	if p == nil {
		delete(next.zones, origin)
	} else {
		next.zones[origin] = p
	}
	s.signing.Store(next)
	return nil
}

// proofKind is a denial an answer calls for.
type proofKind int

const (
	proofNXDomain proofKind = iota
	proofNoData
	proofWildcard
	proofWildNoData
	proofReferral
)

// proofNeed is one denial of an answer: of name, with ce the closest encloser of a wildcard.
type proofNeed struct {
	kind     proofKind
	name, ce string
}

// secAnswer is the DNSSEC work of one answer in a signed zone: what resolveWith found that the
// signatures and proofs depend on.
type secAnswer struct {
	sg    *signing
	pol   *dnssec.Policy // of the answering zone; nil: the zone is not signed
	z     zonedb.ZoneVersion
	wild  map[string]string // owner of a synthesised RRset -> the wildcard it came from
	needs []proofNeed
	renew time.Time  // when the answer's signatures are made anew
	memo  *chainMemo // of the snapshot and signing state (signAnswer)
	co    bool       // the request has the CO bit (RFC 9824 §4): NXDOMAIN stays NXDOMAIN
}

// zone sets the answering zone and reports whether it is signed.
func (sa *secAnswer) zone(z zonedb.ZoneVersion) bool {
	sa.z, sa.pol = z, sa.sg.zones[z.Origin()]
	return sa.pol != nil
}

func (sa *secAnswer) need(kind proofKind, name, ce string) {
	if sa != nil && sa.pol != nil {
		sa.needs = append(sa.needs, proofNeed{kind: kind, name: name, ce: ce})
	}
}

// synthesised records the proofs of the answer at name: found is whether it had data of the
// type asked (or a CNAME); wc is the wildcard that answered ("" when name exists) and ce its
// closest encloser. Nil-safe.
func (sa *secAnswer) synthesised(name, wc, ce string, found bool) {
	switch {
	case sa == nil:
	case wc == "" && !found:
		sa.need(proofNoData, name, "")
	case wc != "" && found && sa.pol.Compact:
		// Signed as name's own RRset: the RRSIG's label count is name's, so the answer needs no
		// proof that name does not exist (RFC 9824 §3.3).
	case wc != "" && found:
		sa.wild[name] = wc
		sa.need(proofWildcard, name, ce)
	case wc != "":
		sa.need(proofWildNoData, name, ce)
	}
}

// dnskeys returns the zone's DNSKEY RRset for a DNSKEY query at its apex, with the SOA's TTL.
func (sa *secAnswer) dnskeys() []dns.RR {
	return sa.pol.Keys.DNSKEYs(sa.z.SOA().Hdr.Ttl)
}

// parentKeys returns the zone's CDS (qtype CDS) or CDNSKEY RRset for a query at its apex,
// from the key set (the DS the parent is to hold, or the delete form while the zone's DNSSEC is
// turned off: dnssec.KeySet.CDS), with the SOA's TTL.
func (sa *secAnswer) parentKeys(qtype uint16) []dns.RR {
	if qtype == dns.TypeCDS {
		return sa.pol.Keys.CDS(sa.z.SOA().Hdr.Ttl)
	}
	return sa.pol.Keys.CDNSKEYs(sa.z.SOA().Hdr.Ttl)
}

// signAnswer adds to resp, answered from a signed zone, the RRSIGs of its answer and authority RRsets
// (not of a referral's NS set, which is the child's), the DS set of a referral or the proof that
// there is none, and the denial proofs resolveWith asked for, each record with its RRSIGs. The
// additional section stays unsigned (it is optional data). A signing failure gives SERVFAIL.
func (s *Server) signAnswer(snap *zonedb.Snapshot, sa *secAnswer, resp *dns.Msg) {
	now := time.Now()
	_, _, sa.renew = sa.pol.Window(now)
	sa.memo = s.memoOf(snap, sa.sg)
	answer, err := sa.signSets(resp.Answer, now)
	if err != nil {
		s.signFailed(resp, err)
		return
	}
	ns, err := sa.signAuthority(resp.Ns, now)
	if err != nil {
		s.signFailed(resp, err)
		return
	}
	for _, rr := range sa.proofs() {
		if containsRR(ns, rr) {
			continue
		}
		sigs, err := sa.sign([]dns.RR{rr}, "", now)
		if err != nil {
			s.signFailed(resp, err)
			return
		}
		ns = append(append(ns, rr), sigs...)
	}
	resp.Answer, resp.Ns = answer, ns
	if sa.pol.Compact {
		sa.compactRcode(resp)
	}
}

// proofs returns the records of the denials resolveWith asked for: from the zone's chain, or
// made for the question with compact denial.
func (sa *secAnswer) proofs() []dns.RR {
	if len(sa.needs) == 0 {
		return nil
	}
	if sa.pol.Compact {
		return sa.compactProofs()
	}
	chain := sa.memo.chain(sa)
	var out []dns.RR
	for _, n := range sa.needs {
		out = append(out, sa.proof(chain, n)...)
	}
	return out
}

// containsRR says whether rrs hold rr (a proof's record already in the authority section).
func containsRR(rrs []dns.RR, rr dns.RR) bool {
	for _, o := range rrs {
		if dns.IsDuplicate(o, rr) {
			return true
		}
	}
	return false
}

// signFailed turns resp into a SERVFAIL with only its OPT record, and logs err (which names
// keys by tag only).
func (s *Server) signFailed(resp *dns.Msg, err error) {
	s.opts.Logger.Error(err, "signing an answer failed", "name", resp.Question[0].Name)
	opt := resp.IsEdns0()
	resp.Rcode = dns.RcodeServerFailure
	resp.Answer, resp.Ns, resp.Extra = nil, nil, nil
	if opt != nil {
		resp.Extra = []dns.RR{opt}
	}
}

// signSets returns rrs with each RRset followed by its RRSIGs; a synthesised RRset is signed
// as its wildcard.
func (sa *secAnswer) signSets(rrs []dns.RR, now time.Time) ([]dns.RR, error) {
	var out []dns.RR
	for _, set := range rrsets(rrs) {
		sigs, err := sa.sign(set, sa.wild[set[0].Header().Name], now)
		if err != nil {
			return nil, err
		}
		out = append(append(out, set...), sigs...)
	}
	return out, nil
}

// signAuthority signs the authority section: a referral's NS set is not signed, and is
// followed by the DS set at the cut with its RRSIGs, or by the proof that the cut has none.
func (sa *secAnswer) signAuthority(rrs []dns.RR, now time.Time) ([]dns.RR, error) {
	var out []dns.RR
	for _, set := range rrsets(rrs) {
		h := set[0].Header()
		if h.Rrtype != dns.TypeNS || h.Name == sa.z.Origin() {
			signed, err := sa.signSets(set, now)
			if err != nil {
				return nil, err
			}
			out = append(out, signed...)
			continue
		}
		out = append(out, set...)
		var ds []dns.RR
		if n := sa.z.Node(dnswire.LookupName(h.Name)); n != nil {
			ds = (&selector{}).all(n.Sets(dns.TypeDS), "")
		}
		if len(ds) == 0 {
			sa.need(proofReferral, dnswire.LookupName(h.Name), "")
			continue
		}
		signed, err := sa.signSets(ds, now)
		if err != nil {
			return nil, err
		}
		out = append(out, signed...)
	}
	return out, nil
}

// proof returns the records of one denial.
func (sa *secAnswer) proof(c *dnssec.Chain, n proofNeed) []dns.RR {
	switch n.kind {
	case proofNXDomain:
		return c.NXDomain(n.name)
	case proofWildcard:
		return c.Wildcard(n.name, n.ce)
	case proofWildNoData:
		return c.WildcardNoData(n.name, n.ce)
	}
	return c.NoData(n.name) // NODATA, and no DS at a referral's cut
}

// maxMemoSigs bounds the signatures a chainMemo keeps; a full memo is emptied.
const maxMemoSigs = 1 << 16

// chainMemo holds what signing derives from one snapshot and signing state: the denial chains
// by zone origin, and the RRSIGs of the RRsets signed (sign), by RRset and signing period.
type chainMemo struct {
	snap   *zonedb.Snapshot
	sg     *signing
	mu     sync.Mutex // guards the maps
	chains map[string]*dnssec.Chain
	sigs   map[string][]dns.RR
}

// memoOf returns the memo of snap and sg, replacing one of another snapshot or signing state.
func (s *Server) memoOf(snap *zonedb.Snapshot, sg *signing) *chainMemo {
	for {
		m := s.chains.Load()
		if m != nil && m.snap == snap && m.sg == sg {
			return m
		}
		nm := &chainMemo{snap: snap, sg: sg, chains: map[string]*dnssec.Chain{}, sigs: map[string][]dns.RR{}}
		if s.chains.CompareAndSwap(m, nm) {
			return nm
		}
	}
}

// chain returns the denial chain of sa's zone, computed once per memo.
func (m *chainMemo) chain(sa *secAnswer) *dnssec.Chain {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.chains[sa.z.Origin()]
	if c == nil {
		c = dnssec.NewChain(sa.z.Origin(), chainNames(sa.z), sa.pol.NSEC3, negativeSOA(sa.z).Header().Ttl)
		m.chains[sa.z.Origin()] = c
	}
	return c
}

// sign returns the RRSIGs of set (Policy.SignAs with wildcard as the owner signed), made once
// per RRset and signing period: rotated and weighted answers, which the answer cache does not
// keep, reuse them. The records returned are shared and must not be modified.
func (sa *secAnswer) sign(set []dns.RR, wildcard string, now time.Time) ([]dns.RR, error) {
	texts := make([]string, len(set))
	for i, rr := range set {
		texts[i] = rr.String()
	}
	slices.Sort(texts)
	key := strconv.FormatInt(sa.renew.UnixNano(), 10) + "\x00" + wildcard + "\x00" + strings.Join(texts, "\x00")
	m := sa.memo
	m.mu.Lock()
	sigs, ok := m.sigs[key]
	m.mu.Unlock()
	if ok {
		return sigs, nil
	}
	sigs, err := sa.pol.SignAs(set, wildcard, now)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.sigs) >= maxMemoSigs {
		clear(m.sigs)
	}
	m.sigs[key] = sigs
	m.mu.Unlock()
	return sigs, nil
}

// chainNames returns the names the denial chain of z covers, with their types: every owner
// that is not below a delegation, a delegation point with its NS and DS types only.
func chainNames(z zonedb.ZoneVersion) map[string][]uint16 {
	out := map[string][]uint16{z.Origin(): z.Node(z.Origin()).Types()}
	for _, rs := range z.Sets() {
		name := rs.Name
		if _, done := out[name]; done {
			continue
		}
		if p := dnswire.Parent(name); p != z.Origin() && belowCut(z, p) {
			continue // glue or other data below a delegation
		}
		out[name] = denialTypes(z, name)
	}
	return out
}

// denialTypes returns the types of name, a name of z not below a delegation, as its NSEC or
// NSEC3 lists them (before RRSIG, NSEC and DNSKEY): a delegation point's NS and DS only, none
// for an empty non-terminal or a name that does not exist.
func denialTypes(z zonedb.ZoneVersion, name string) []uint16 {
	n := z.Node(name)
	if n == nil {
		return nil
	}
	if name == z.Origin() || len(n.Sets(dns.TypeNS)) == 0 {
		return n.Types()
	}
	var types []uint16
	for _, t := range []uint16{dns.TypeNS, dns.TypeDS} {
		if len(n.Sets(t)) > 0 {
			types = append(types, t)
		}
	}
	return types
}

// signedZone returns the full transfer of z when the server signs it (xfr.Options.Signed): the
// SOA with its RRSIGs, every RRset of the zone with its RRSIGs (the sets of one name and type
// merged, as answers merge them, with their smallest TTL; a delegation's NS set and the data
// below it unsigned), the DNSKEY, CDS and CDNSKEY RRsets and, with NSEC3, the NSEC3PARAM record, the whole denial
// chain, each record with its RRSIGs, and the SOA again. False for a zone served unsigned.
func (s *Server) signedZone(z zonedb.ZoneVersion) ([]dns.RR, bool, error) {
	sg := s.signing.Load()
	if sg == nil || sg.zones[z.Origin()] == nil {
		return nil, false, nil
	}
	sa := &secAnswer{sg: sg, pol: sg.zones[z.Origin()], z: z}
	now := time.Now()
	chain := dnssec.NewChain(z.Origin(), chainNames(z), sa.pol.NSEC3, negativeSOA(z).Header().Ttl)
	sets := [][]dns.RR{{z.SOA()}, sa.dnskeys(), sa.parentKeys(dns.TypeCDS), sa.parentKeys(dns.TypeCDNSKEY)}
	if p := chain.NSEC3PARAM(); p != nil {
		sets = append(sets, []dns.RR{p})
	}
	sets = append(sets, mergedSets(z)...)
	for _, rr := range chain.All() {
		sets = append(sets, []dns.RR{rr})
	}
	var out []dns.RR
	for _, set := range sets {
		out = append(out, set...)
		h := set[0].Header()
		if p := dnswire.Parent(h.Name); h.Name != z.Origin() && (h.Rrtype == dns.TypeNS || p != z.Origin() && belowCut(z, p)) {
			if h.Rrtype != dns.TypeDS {
				continue // a delegation's NS set, glue: the child's data
			}
		}
		sigs, err := sa.pol.Sign(set, now)
		if err != nil {
			return nil, true, err
		}
		out = append(out, sigs...)
	}
	return append(out, z.SOA()), true, nil
}

// mergedSets returns z's RRsets but the SOA, the record sets of one name and type merged into
// one RRset with their smallest TTL (RFC 2181 §5.2).
func mergedSets(z zonedb.ZoneVersion) [][]dns.RR {
	var out [][]dns.RR
	var sel selector
	sets := z.Sets()
	for i := 0; i < len(sets); {
		j := i + 1
		for j < len(sets) && sets[j].Name == sets[i].Name && sets[j].Type == sets[i].Type {
			j++
		}
		set := dns.Dedup(sel.all(sets[i:j], ""), nil)
		out = append(out, set)
		i = j
	}
	return out
}
