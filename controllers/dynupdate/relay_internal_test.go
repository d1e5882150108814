package dynupdate

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// TestRelay_ATryAgainIsARetransmission: a peer that takes the relayed UPDATE but answers it
// later than relayTimeout gets the next try as the same signed message (the same MAC), which
// its replay memory answers from the first copy, never a new UPDATE to apply again.
func TestRelay_ATryAgainIsARetransmission(t *testing.T) {
	key := dnswire.TSIGKey{Name: "relay-key.", Algorithm: dns.HmacSHA256, Secret: "cmVsYXktcmV0cmFuc21pc3Npb24tdGVzdC1zZWNyZXQ="}
	var mu sync.Mutex
	var macs []string
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		mu.Lock()
		macs = append(macs, strings.ToLower(q.IsTsig().MAC))
		first := len(macs) == 1
		mu.Unlock()
		if first {
			time.Sleep(relayTimeout + 500*time.Millisecond) // taken, answered too late
		}
		m.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		_ = w.WriteMsg(m)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: h, TsigSecret: map[string]string{key.Name: key.Secret},
		MsgAcceptFunc: func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept }}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })

	req := new(dns.Msg)
	req.SetUpdate("relay.test.")
	rr, _ := dns.NewRR(`_acme-challenge.relay.test. 60 IN TXT "tok"`)
	req.Insert([]dns.RR{rr})
	a := &Applier{Log: logr.Discard()}
	b := dynupdate.Binding{DNSZone: types.NamespacedName{Namespace: "ns", Name: "zone"}, Zone: "relay.test.", Secret: "k", Key: key}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rcode, err := a.relay(ctx, req, b, []string{ln.Addr().String()})
	mu.Lock()
	defer mu.Unlock()
	if rcode != dns.RcodeSuccess || len(macs) < 2 {
		t.Fatalf("relay: %s, %v, the peer got %d tries; want NOERROR on a try again", dns.RcodeToString[rcode], err, len(macs))
	}
	for i, mac := range macs[1:] {
		if mac != macs[0] {
			t.Fatalf("try %d is another signed UPDATE (MAC %s, the first's %s): the peer applies it again", i+2, mac, macs[0])
		}
	}
}
