package dnsserver

import (
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// tsigState is what the server knows of a request's TSIG.
type tsigState int

const (
	tsigNone  tsigState = iota // unsigned, or the server has no key
	tsigValid                  // signed with one of the server's keys, verified
	tsigBad                    // signed, but with an unknown key or a signature that does not verify
)

// tsig returns the state of req's TSIG as received on w. The server's keys are the transfer
// key (ServerOptions.TSIG) and the dynamic-update keys (ServerOptions.Updates); miekg/dns
// verified the signature with them (Server.keys) before ServeDNS.
func (s *Server) tsig(w dns.ResponseWriter, req *dns.Msg) tsigState {
	t := req.IsTsig()
	switch {
	case (s.opts.TSIG == nil && s.opts.Updates == nil) || t == nil:
		return tsigNone
	case w.TsigStatus() != nil:
		return tsigBad
	}
	return tsigValid
}

// transferSigned reports whether req was signed with the transfer key (ServerOptions.TSIG)
// and verified: a dynamic-update key does not open zone transfers.
func (s *Server) transferSigned(w dns.ResponseWriter, req *dns.Msg) bool {
	t := req.IsTsig()
	return s.opts.TSIG != nil && t != nil && strings.EqualFold(dnswire.Canonical(t.Hdr.Name), dnswire.Canonical(s.opts.TSIG.Name)) &&
		s.tsig(w, req) == tsigValid
}

// sign makes resp signed with the request's key when it was verified (the miekg server
// computes the MAC when it writes).
func (s *Server) sign(w dns.ResponseWriter, req, resp *dns.Msg) {
	if s.tsig(w, req) == tsigValid {
		t := req.IsTsig()
		resp.SetTsig(t.Hdr.Name, t.Algorithm, dnswire.TSIGFudge, time.Now().Unix())
	}
}
