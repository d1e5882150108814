package dnsserver

import (
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// TestUpdate_TheTransferKeyNeverVerifiesAnUpdate: a tenant's dynamic-update key of the same name
// as the server's transfer key (ServerOptions.TSIG) verifies the tenant's UPDATEs, and the
// transfer key, held by the secondaries, verifies none: an UPDATE signed with it is BADSIG,
// never handed to the handler. Transfers stay signed with the transfer key alone.
func TestUpdate_TheTransferKeyNeverVerifiesAnUpdate(t *testing.T) {
	transfer := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: otherSecret}
	tenant := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	h := &recordingUpdates{key: tenant, rcode: dns.RcodeSuccess}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h, TSIG: &transfer})
	for _, proto := range []string{"udp", "tcp"} {
		resp, err := signedUpdate(t, srv.Addr(), proto, tenant)
		if err != nil || resp.Rcode != dns.RcodeSuccess {
			t.Fatalf("%s: the tenant's UPDATE: %s, %v; want NOERROR", proto, dns.RcodeToString[resp.Rcode], err)
		}
		resp, _ = signedUpdate(t, srv.Addr(), proto, transfer)
		if tt := resp.IsTsig(); resp.Rcode != dns.RcodeNotAuth || tt == nil || tt.Error != dns.RcodeBadSig {
			t.Fatalf("%s: an UPDATE signed with the transfer key: %s %v; want NOTAUTH BADSIG", proto, dns.RcodeToString[resp.Rcode], tt)
		}
	}
	if got := h.handed(); len(got) != 2 {
		t.Fatalf("the handler was handed %q, want the tenant's two UPDATEs alone", got)
	}
}
