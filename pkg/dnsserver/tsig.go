package dnsserver

import (
	"errors"
	"fmt"
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

// tsig returns the state of req's TSIG as received on w: valid when tsigError finds none. The
// server's keys are the transfer key (ServerOptions.TSIG) and the dynamic-update keys
// (ServerOptions.Updates); miekg/dns verified the signature with them (Server.keys) before
// ServeDNS.
func (s *Server) tsig(w dns.ResponseWriter, req *dns.Msg) tsigState {
	t := req.IsTsig()
	switch {
	case (s.opts.TSIG == nil && s.opts.Updates == nil) || t == nil:
		return tsigNone
	case tsigError(w, t, time.Now()) != dns.RcodeSuccess:
		return tsigBad
	}
	return tsigValid
}

// tsigError returns the TSIG error (RFC 8945 §5.2) of the request TSIG t as received on w at
// now, dns.RcodeSuccess for none: BADKEY for a key or algorithm the server does not know
// (§5.2.1), BADSIG for a MAC that does not verify (§5.2.2), BADTIME for a verified MAC whose
// time signed is further from now than the request's fudge or dnswire.TSIGFudge (300 s),
// whichever is smaller (§5.2.3): a client's fudge never widens the window past it.
func tsigError(w dns.ResponseWriter, t *dns.TSIG, now time.Time) uint16 {
	switch err := w.TsigStatus(); {
	case err == nil:
	case errors.Is(err, dns.ErrSecret), errors.Is(err, dns.ErrKeyAlg):
		return dns.RcodeBadKey
	case errors.Is(err, dns.ErrTime):
		return dns.RcodeBadTime
	default:
		return dns.RcodeBadSig
	}
	if skew := now.Unix() - int64(t.TimeSigned); max(skew, -skew) > int64(min(t.Fudge, dnswire.TSIGFudge)) {
		return dns.RcodeBadTime
	}
	return dns.RcodeSuccess
}

// tsigFailure makes resp, the answer to req whose TSIG has error e (tsigError), NOTAUTH with a
// TSIG RR carrying e (RFC 8945 §5.2), the request's key name, algorithm, fudge and original ID.
// BADKEY and BADSIG go unsigned, MAC size 0, time signed the server's now (§5.3.2; clients
// check that time even then); BADTIME is signed with the request's key when written, with the
// request's time signed and the server's time at now in other data (§5.2.3), so that the
// client verifies it whatever the skew. Write the reply of resp with tsigReply.
func tsigFailure(req, resp *dns.Msg, e uint16, now time.Time) {
	t := req.IsTsig()
	resp.Rcode = dns.RcodeNotAuth
	r := &dns.TSIG{Hdr: dns.RR_Header{Name: t.Hdr.Name, Rrtype: dns.TypeTSIG, Class: dns.ClassANY}, Algorithm: t.Algorithm,
		TimeSigned: uint64(now.Unix()), Fudge: t.Fudge, OrigId: req.Id, Error: e}
	if e == dns.RcodeBadTime {
		r.TimeSigned = t.TimeSigned
		r.OtherLen = 6
		r.OtherData = fmt.Sprintf("%012x", uint64(now.Unix())&(1<<48-1))
	}
	resp.Extra = append(resp.Extra, r)
}

// tsigReply returns the reply that writes resp, never signed by sign: a NOTAUTH goes unsigned
// (miekg/dns clients read a signed one as their own TSIG failure) but for tsigFailure's TSIG
// RR. One carrying BADKEY or BADSIG is packed here as it is, since miekg/dns's writer would
// zero its time signed; a BADTIME one is signed by the writer (dns.TsigGenerateWithProvider).
func tsigReply(resp *dns.Msg) reply {
	if t := resp.IsTsig(); t != nil && t.Error != dns.RcodeBadTime {
		if wire, err := resp.Pack(); err == nil {
			return reply{msg: resp, wire: wire}
		}
		resp.Extra = resp.Extra[:len(resp.Extra)-1]
	}
	return reply{msg: resp, unsigned: resp.Rcode == dns.RcodeNotAuth}
}

// transferSigned reports whether req was signed with the transfer key (ServerOptions.TSIG)
// and verified: a dynamic-update key does not open zone transfers.
func (s *Server) transferSigned(w dns.ResponseWriter, req *dns.Msg) bool {
	t := req.IsTsig()
	return s.opts.TSIG != nil && t != nil && strings.EqualFold(dnswire.Fqdn(t.Hdr.Name), dnswire.Fqdn(s.opts.TSIG.Name)) &&
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
