package dnsserver

import (
	"context"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// UpdateHandler is the dynamic-update unit (controllers/dynupdate's Applier) as the server sees
// it: the keys UPDATEs may be signed with, and the UPDATEs themselves (RFC 2136), handed over
// once their TSIG is verified. It is all the server knows of dynamic updates.
type UpdateHandler interface {
	// TSIGKey returns the dynamic-update key named name that the zone zone binds (both
	// lower-case FQDNs: the key name and the UPDATE's zone), false when it binds none.
	TSIGKey(name, zone string) (dnswire.TSIGKey, bool)
	// Zone returns the longest zone with dynamic updates that is name or an ancestor of it
	// (lower-case FQDNs), false when none is.
	Zone(name string) (string, bool)
	// ServeUpdate applies req, an UPDATE whose zone section is one question, signed with the
	// key keyName (a lower-case FQDN) and verified, and returns the response's rcode (RFC 2136
	// §2.2). It returns once the change is written or refused, or ctx ends (SERVFAIL). The
	// server hands it each signed UPDATE (key name and MAC) once while its TSIG window lasts:
	// a copy received again gets the first answer (replays).
	ServeUpdate(ctx context.Context, req *dns.Msg, keyName string) int
}

// DefaultUpdateTimeout is the default ServerOptions.UpdateTimeout.
const DefaultUpdateTimeout = 10 * time.Second

// keys returns the TSIG provider of the server's keys: the transfer key (ServerOptions.TSIG)
// and the dynamic-update keys (ServerOptions.Updates); nil with neither, so that miekg/dns
// verifies nothing and signed requests are answered as unsigned ones. An UPDATE is verified
// with the dynamic-update keys alone (opcodeKeys): the transfer key, which the secondaries
// hold, never verifies one, and a tenant's key of the transfer key's name verifies its own.
func (s *Server) keys() dns.TsigProvider {
	if s.opts.TSIG == nil && s.opts.Updates == nil {
		return nil
	}
	return opcodeKeys{update: s.keysFor(false), other: s.keysFor(true)}
}

// keysFor returns the provider of the dynamic-update keys, and of the transfer key first when
// transfer is true. A dynamic-update key is the one bound to the message's question name as a
// zone (an UPDATE's zone section), else to the zone with dynamic updates that encloses that
// name: a client that finds the zone by asking for the SOA of the name it updates signs that
// query with its key (nsupdate without a "zone" line asks for the SOA of
// _acme-challenge.<zone>), and must get a signed answer, not NOTAUTH.
func (s *Server) keysFor(transfer bool) dnswire.TSIGProvider {
	return dnswire.TSIGProvider(func(name, qname string) (dnswire.TSIGKey, bool) {
		if t := s.opts.TSIG; transfer && t != nil && dnswire.Fqdn(t.Name) == name {
			return *t, true
		}
		if s.opts.Updates == nil {
			return dnswire.TSIGKey{}, false
		}
		if k, ok := s.opts.Updates.TSIGKey(name, qname); ok {
			return k, true
		}
		if zone, ok := s.opts.Updates.Zone(qname); ok && zone != qname {
			return s.opts.Updates.TSIGKey(name, zone)
		}
		return dnswire.TSIGKey{}, false
	})
}

// opcodeKeys verifies and signs an UPDATE (its opcode, in the header that starts a request's
// MACed data and follows the request MAC in a response's) with update, any other message with
// other.
type opcodeKeys struct{ update, other dnswire.TSIGProvider }

// Generate signs a response (dns.TsigProvider): the MACed data is the request MAC's size and
// the request MAC, then the response (RFC 8945 §4.3.1).
func (k opcodeKeys) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	off := 0
	if len(msg) >= 2 {
		off = 2 + int(msg[0])<<8 + int(msg[1])
	}
	if isUpdate(msg, off) {
		return k.update.Generate(msg, t)
	}
	return k.other.Generate(msg, t)
}

// Verify checks a request's MAC (dns.TsigProvider).
func (k opcodeKeys) Verify(msg []byte, t *dns.TSIG) error {
	if isUpdate(msg, 0) {
		return k.update.Verify(msg, t)
	}
	return k.other.Verify(msg, t)
}

// isUpdate reports whether the DNS header at msg[off:] has opcode UPDATE.
func isUpdate(msg []byte, off int) bool {
	return off >= 0 && len(msg) > off+2 && int(msg[off+2]>>3)&0xF == dns.OpcodeUpdate
}

// update answers an UPDATE (RFC 2136 §3) into resp: FORMERR unless the zone section is one
// question (§3.1.1); NOTAUTH when unsigned (the server requires TSIG for every update), or,
// with a TSIG RR carrying the error (tsigFailure), signed with a key that did not verify or
// outside its time window (tsigError, RFC 8945 §5.2); the first answer of the same signed
// UPDATE when it was accepted before within its window (replays); else the handler's rcode
// within ServerOptions.UpdateTimeout.
func (s *Server) update(w dns.ResponseWriter, req, resp *dns.Msg) *dns.Msg {
	if len(req.Question) != 1 {
		resp.Rcode = dns.RcodeFormatError
		return resp
	}
	t := req.IsTsig()
	if t == nil {
		resp.Rcode = dns.RcodeNotAuth
		return resp
	}
	now := time.Now()
	if e := tsigError(w, t, now); e != dns.RcodeSuccess {
		tsigFailure(req, resp, e, now)
		return resp
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.UpdateTimeout)
	defer cancel()
	r, first := s.replays.claim(t, now)
	if r == nil {
		resp.Rcode = dns.RcodeRefused // the key floods: maxReplaysPerKey UPDATEs in its window
		return resp
	}
	if !first {
		resp.Rcode = r.wait(ctx)
		return resp
	}
	resp.Rcode = dns.RcodeServerFailure // what the replays get should the handler panic
	defer func() { r.finish(resp.Rcode) }()
	resp.Rcode = s.opts.Updates.ServeUpdate(ctx, req, dnswire.Fqdn(t.Hdr.Name))
	return resp
}

// zoneSOA answers an SOA query for a name in a zone with dynamic updates that the store does not
// serve (a zone of another provider), so that clients that find the zone of a name by asking
// the UPDATE server for its SOA (lego's, certbot's and nsupdate's) find it: at the apex an
// answer, below it NODATA with the SOA in the authority section, AA set, TTL 0 (never cached).
// The SOA is a placeholder naming the zone (serial 1): it says where the zone's apex is, not
// what its provider serves. False when the query is not such a query.
func (s *Server) zoneSOA(snap *zonedb.Snapshot, q dns.Question, resp *dns.Msg) bool {
	if s.opts.Updates == nil || q.Qtype != dns.TypeSOA {
		return false
	}
	qname := dnswire.Fqdn(q.Name)
	if _, served := snap.Enclosing(qname); served {
		return false
	}
	zone, ok := s.opts.Updates.Zone(qname)
	if !ok {
		return false
	}
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET}, Ns: zone, Mbox: "hostmaster." + zone,
		Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 0}
	resp.Authoritative = true
	if qname == zone {
		resp.Answer = []dns.RR{soa}
	} else {
		resp.Ns = []dns.RR{soa}
	}
	return true
}
