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
	tsigValid                  // signed with the server's key, verified
	tsigBad                    // signed, but with another key or a signature that does not verify
)

// tsig returns the state of req's TSIG as received on w.
func (s *Server) tsig(w dns.ResponseWriter, req *dns.Msg) tsigState {
	t := req.IsTsig()
	switch {
	case s.opts.TSIG == nil || t == nil:
		return tsigNone
	case w.TsigStatus() != nil || !strings.EqualFold(t.Hdr.Name, s.opts.TSIG.Name):
		return tsigBad
	}
	return tsigValid
}

// sign makes resp signed with the request's key when it was verified (the miekg server
// computes the MAC when it writes).
func (s *Server) sign(w dns.ResponseWriter, req, resp *dns.Msg) {
	if s.tsig(w, req) == tsigValid {
		t := req.IsTsig()
		resp.SetTsig(t.Hdr.Name, t.Algorithm, dnswire.TSIGFudge, time.Now().Unix())
	}
}
