package fakedns

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// udpSize is the EDNS0 payload size advertised in answers: 1232 bytes, the DNS Flag Day 2020
// value, as pkg/dnsserver uses.
const udpSize = 1232

// maxChase bounds CNAME chasing within a zone.
const maxChase = 8

// tcpTimeout bounds each TCP read and write.
const tcpTimeout = 2 * time.Second

// Zone is one hosted zone as a fake serves it.
type Zone struct {
	// Name is the zone apex, in the dotless form (dnswire.Dotless: lower-case, no trailing dot).
	Name string
	// RecordSets are every record set of the zone in canonical form (see provider.RecordSet and
	// provider.CanonicalTarget), the apex SOA and NS included. A zone without an apex SOA
	// answers SERVFAIL.
	RecordSets []provider.RecordSet
}

// Source returns the zones to serve, in order of preference: when several zones have the same
// name (Route 53 allows it), the first answers. It is called once per query, concurrently from
// the server's goroutines, so it must be safe for concurrent use and return data it no longer
// modifies. An error makes that query's answer SERVFAIL: a fake that stores a value it cannot
// express as a record set is then seen at once.
type Source func() ([]Zone, error)

// RecordSet builds a canonical record set from zone-file style values (RFC 1035 §5.1), the form
// Route 53 and Cloud DNS store: each value is parsed with dns.NewRR as "name ttl IN rtype value",
// so names in values are absolute with or without a trailing dot, and TXT values are quoted
// character-strings with decimal \DDD escapes. name is any spelling of the owner; ttl is in
// seconds. The result has canonical targets (provider.TargetFromRR), no set identifier and no
// weight. Errors name the value that does not parse or has another type.
func RecordSet(name, rtype string, ttl int64, values []string) (provider.RecordSet, error) {
	rtype = strings.ToUpper(rtype)
	rs := provider.RecordSet{Name: dnswire.Dotless(name), Type: rtype, TTL: ttl}
	want, ok := dns.StringToType[rtype]
	if !ok {
		return provider.RecordSet{}, fmt.Errorf("fakedns: %s: unknown record type %q", rs.Name, rtype)
	}
	for _, v := range values {
		rr, err := dns.NewRR(fmt.Sprintf("%s %d IN %s %s", dnswire.Fqdn(name), ttl, rtype, v))
		if err != nil {
			return provider.RecordSet{}, fmt.Errorf("fakedns: %s/%s value %q: %w", rs.Name, rtype, v, err)
		}
		if rr == nil || rr.Header().Rrtype != want {
			return provider.RecordSet{}, fmt.Errorf("fakedns: %s/%s value %q is not %s rdata", rs.Name, rtype, v, rtype)
		}
		rs.Targets = append(rs.Targets, provider.TargetFromRR(rr))
	}
	return rs, nil
}

// Server answers DNS queries from a Source over UDP and TCP on 127.0.0.1, one port for both.
// It implements dns.Handler. Start it with Start; stop it with Close.
type Server struct {
	src  Source
	addr string
	udp  *dns.Server
	tcp  *dns.Server
	done chan error // receives each ActivateAndServe result; buffered for both

	closeOnce sync.Once
	closeErr  error
}

// Start binds a free port on 127.0.0.1 for both UDP and TCP and serves src on it until Close.
// It returns once both listeners accept queries. Errors: no port free for both after 20
// attempts, or a server that fails to start.
func Start(src Source) (*Server, error) {
	if src == nil {
		return nil, errors.New("fakedns: nil Source")
	}
	pc, l, err := listen()
	if err != nil {
		return nil, err
	}
	s := &Server{src: src, addr: pc.LocalAddr().String(), done: make(chan error, 2)}
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	s.udp = &dns.Server{PacketConn: pc, Handler: s, UDPSize: dns.MaxMsgSize, NotifyStartedFunc: notify}
	s.tcp = &dns.Server{Listener: l, Handler: s, ReadTimeout: tcpTimeout, WriteTimeout: tcpTimeout, NotifyStartedFunc: notify}
	for _, srv := range []*dns.Server{s.udp, s.tcp} {
		go func() { s.done <- srv.ActivateAndServe() }()
	}
	for range 2 {
		select {
		case <-started:
		case err := <-s.done:
			// One failed before it started: stop the other (it may not have started either,
			// so close the sockets too) and report.
			_ = pc.Close()
			_ = l.Close()
			return nil, fmt.Errorf("fakedns: serve %s: %w", s.addr, err)
		}
	}
	return s, nil
}

// listen binds UDP on 127.0.0.1:0 and TCP on the port UDP got, retrying when TCP cannot have it.
func listen() (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("fakedns: listen udp: %w", err)
		}
		port := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			_ = pc.Close()
			lastErr = err
			continue
		}
		return pc, l, nil
	}
	return nil, nil, fmt.Errorf("fakedns: no port free for both UDP and TCP: %w", lastErr)
}

// Addr is the bound host:port, the same for UDP and TCP.
func (s *Server) Addr() string { return s.addr }

// Close stops both listeners and waits for them to return. It is idempotent; later calls
// return the first call's result.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.udp.Shutdown(), s.tcp.Shutdown())
		for range 2 {
			<-s.done // ActivateAndServe returns nil after Shutdown
		}
	})
	return s.closeErr
}

// ServeDNS answers one query (dns.Handler).
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	_ = w.WriteMsg(s.answer(req, udp))
}

// answer builds the response to req.
func (s *Server) answer(req *dns.Msg, udp bool) *dns.Msg {
	resp := new(dns.Msg)
	resp.SetReply(req)
	resp.RecursionAvailable = false
	if req.Opcode != dns.OpcodeQuery {
		resp.SetRcode(req, dns.RcodeNotImplemented)
		return resp
	}
	if len(req.Question) != 1 {
		resp.SetRcode(req, dns.RcodeFormatError)
		return resp
	}
	opt := req.IsEdns0()
	if opt != nil {
		resp.SetEdns0(udpSize, false)
		if opt.Version() != 0 {
			resp.Rcode = dns.RcodeBadVers // RFC 6891 §6.1.3
			return resp
		}
	}
	q := req.Question[0]
	switch {
	case q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY,
		q.Qtype == dns.TypeAXFR || q.Qtype == dns.TypeIXFR:
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	zones, err := s.src()
	if err != nil {
		resp.Rcode = dns.RcodeServerFailure
		return resp
	}
	qname := strings.ToLower(dns.Fqdn(q.Name))
	zone := pick(zones, qname)
	if zone == nil {
		resp.Rcode = dns.RcodeRefused
		return resp
	}
	z, err := newIndex(*zone)
	if err != nil {
		resp.Rcode = dns.RcodeServerFailure
		return resp
	}
	z.resolve(qname, q.Qtype, resp)
	size := dns.MaxMsgSize
	if udp {
		size = dns.MinMsgSize // RFC 1035 §4.2.1: 512 bytes without EDNS0
		if opt != nil {
			size = max(size, int(opt.UDPSize()))
		}
	}
	resp.Truncate(size)
	return resp
}

// pick returns the zone with the longest name that is qname or an ancestor of it, the first of
// equals; nil when none is.
func pick(zones []Zone, qname string) *Zone {
	var best *Zone
	bestLabels := -1
	for i := range zones {
		origin := dnswire.Fqdn(zones[i].Name)
		if !dns.IsSubDomain(origin, qname) {
			continue
		}
		if n := dns.CountLabel(origin); n > bestLabels {
			best, bestLabels = &zones[i], n
		}
	}
	return best
}

// index is one zone's records by owner and type, built per query.
type index struct {
	origin string                         // lower-case FQDN
	soa    *dns.SOA                       // the apex SOA
	nodes  map[string]map[uint16][]dns.RR // owner FQDN -> type -> records; empty map: empty non-terminal
}

// newIndex converts the zone's record sets with provider.ToRRs. Errors: a set that does not
// convert, or no SOA at the apex.
func newIndex(z Zone) (*index, error) {
	ix := &index{origin: dnswire.Fqdn(z.Name), nodes: map[string]map[uint16][]dns.RR{}}
	ix.nodes[ix.origin] = map[uint16][]dns.RR{}
	for _, rs := range z.RecordSets {
		rrs, err := provider.ToRRs(rs)
		if err != nil {
			return nil, err
		}
		for _, rr := range rrs {
			h := rr.Header()
			h.Name = strings.ToLower(h.Name)
			if !dns.IsSubDomain(ix.origin, h.Name) {
				return nil, fmt.Errorf("fakedns: %s is not in zone %s", h.Name, ix.origin)
			}
			if soa, ok := rr.(*dns.SOA); ok && h.Name == ix.origin {
				ix.soa = soa
			}
			ix.add(rr)
		}
	}
	if ix.soa == nil {
		return nil, fmt.Errorf("fakedns: zone %s has no SOA at its apex", ix.origin)
	}
	return ix, nil
}

// add files rr under its owner, once (RFC 2181 §5: an RRset has no duplicates; sets of one name
// and type with different set identifiers merge here), and creates the empty non-terminals
// between the owner and the apex.
func (ix *index) add(rr dns.RR) {
	h := rr.Header()
	n := ix.nodes[h.Name]
	if n == nil {
		n = map[uint16][]dns.RR{}
		ix.nodes[h.Name] = n
	}
	for _, o := range n[h.Rrtype] {
		if dns.IsDuplicate(o, rr) {
			return
		}
	}
	n[h.Rrtype] = append(n[h.Rrtype], rr)
	for p := parent(h.Name); p != "" && p != ix.origin && dns.IsSubDomain(ix.origin, p); p = parent(p) {
		if _, ok := ix.nodes[p]; ok {
			break
		}
		ix.nodes[p] = map[uint16][]dns.RR{}
	}
}

// parent returns the FQDN one label up, "" at the root.
func parent(name string) string {
	off, end := dns.NextLabel(name, 0)
	if end {
		return ""
	}
	return name[off:]
}

// negativeSOA is the SOA for NXDOMAIN and NODATA answers, with TTL min(SOA TTL, MINIMUM)
// (RFC 2308 §3, §5).
func (ix *index) negativeSOA() dns.RR {
	soa := dns.Copy(ix.soa).(*dns.SOA)
	soa.Hdr.Ttl = min(soa.Hdr.Ttl, soa.Minttl)
	return soa
}

// cut returns the highest NS set strictly below the apex at or above name, and its owner; ""
// when name is not at or below a delegation. DS at the cut itself is answered by this side
// (RFC 4035 §3.1.4.1).
func (ix *index) cut(name string, qtype uint16) (string, []dns.RR) {
	labels := dns.Split(name)
	below := len(labels) - dns.CountLabel(ix.origin)
	for i := below - 1; i >= 0; i-- {
		owner := name[labels[i]:]
		n, ok := ix.nodes[owner]
		if !ok {
			return "", nil
		}
		if ns := n[dns.TypeNS]; len(ns) > 0 {
			if i == 0 && qtype == dns.TypeDS {
				return "", nil
			}
			return owner, ns
		}
	}
	return "", nil
}

// closestEncloser returns the nearest existing ancestor of a name that does not exist
// (RFC 4592 §3.3.1); the apex always exists.
func (ix *index) closestEncloser(name string) string {
	for p := parent(name); p != "" && dns.IsSubDomain(ix.origin, p); p = parent(p) {
		if _, ok := ix.nodes[p]; ok {
			return p
		}
	}
	return ix.origin
}

// withOwner returns copies of rrs with owner as their name (wildcard synthesis), or rrs as is
// when they already have it.
func withOwner(rrs []dns.RR, owner string) []dns.RR {
	if len(rrs) == 0 || rrs[0].Header().Name == owner {
		return rrs
	}
	out := make([]dns.RR, len(rrs))
	for i, rr := range rrs {
		out[i] = dns.Copy(rr)
		out[i].Header().Name = owner
	}
	return out
}

// resolve fills resp for qname/qtype: RFC 1034 §4.3.2 steps 3 and 4 without recursion.
func (ix *index) resolve(qname string, qtype uint16, resp *dns.Msg) {
	resp.Authoritative = true
	seen := map[string]bool{}
	name := qname
	for range maxChase {
		seen[name] = true
		if owner, ns := ix.cut(name, qtype); owner != "" {
			if len(resp.Answer) == 0 {
				resp.Authoritative = false // a referral
			}
			resp.Ns = append(resp.Ns, ns...)
			resp.Extra = append(resp.Extra, ix.glue(ns, owner)...)
			return
		}
		n, ok := ix.nodes[name]
		if !ok {
			wc, wok := ix.nodes["*."+ix.closestEncloser(name)]
			if !wok || len(wc) == 0 {
				resp.Rcode = dns.RcodeNameError // RFC 6604 §3: the last name's rcode
				resp.Ns = append(resp.Ns, ix.negativeSOA())
				return
			}
			n = wc
		}
		if cname := n[dns.TypeCNAME]; len(cname) > 0 && qtype != dns.TypeCNAME {
			resp.Answer = append(resp.Answer, withOwner(cname[:1], name)...)
			target := strings.ToLower(cname[0].(*dns.CNAME).Target)
			if !dns.IsSubDomain(ix.origin, target) || seen[target] {
				return // out of zone, or a loop: the client follows it
			}
			name = target
			continue
		}
		var rrs []dns.RR
		if qtype == dns.TypeANY {
			for _, list := range n {
				rrs = append(rrs, list...)
			}
		} else {
			rrs = n[qtype]
		}
		if len(rrs) == 0 {
			resp.Ns = append(resp.Ns, ix.negativeSOA()) // NODATA (RFC 2308 §2.2)
			return
		}
		resp.Answer = append(resp.Answer, withOwner(rrs, name)...)
		return
	}
}

// glue returns the A and AAAA records of the NS targets that lie at or below the cut.
func (ix *index) glue(ns []dns.RR, cut string) []dns.RR {
	var out []dns.RR
	for _, rr := range ns {
		host := strings.ToLower(rr.(*dns.NS).Ns)
		if !dns.IsSubDomain(cut, host) {
			continue
		}
		if n, ok := ix.nodes[host]; ok {
			out = append(out, n[dns.TypeA]...)
			out = append(out, n[dns.TypeAAAA]...)
		}
	}
	return out
}

// Lazy is a Server started on first use, for fakes that should not hold sockets unless a test
// asks for their DNS address. It is safe for concurrent use.
type Lazy struct {
	src    Source
	mu     sync.Mutex
	srv    *Server
	closed bool
}

// NewLazy returns a Lazy that serves src once Addr is called.
func NewLazy(src Source) *Lazy { return &Lazy{src: src} }

// Addr starts the server on the first call and returns its host:port (127.0.0.1, UDP and TCP).
// It panics if the server cannot start or was closed, as httptest.NewServer panics when it
// cannot listen: a test cannot go on without it.
func (l *Lazy) Addr() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		panic("fakedns: DNS address requested after Close")
	}
	if l.srv == nil {
		srv, err := Start(l.src)
		if err != nil {
			panic(err)
		}
		l.srv = srv
	}
	return l.srv.Addr()
}

// Close stops the server if it was started; later Addr calls panic. It is idempotent.
func (l *Lazy) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.srv != nil {
		_ = l.srv.Close()
	}
}
