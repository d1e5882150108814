package dynupdate

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRetransmissionsShareTheFirstAnswer: the same signed message (key, ID, MAC) joins the
// first copy's answer while it is in flight and within retransmitWindow after; another MAC or
// ID, or a copy past the window, is a new UPDATE; an unsigned message has no identity.
func TestRetransmissionsShareTheFirstAnswer(t *testing.T) {
	msg := func(id uint16, mac string) *dns.Msg {
		m := new(dns.Msg)
		m.SetUpdate("dyn.test.")
		m.Id = id
		m.SetTsig("k.", dns.HmacSHA256, 300, 0)
		m.IsTsig().MAC = mac
		return m
	}
	if _, ok := messageID(new(dns.Msg), "k."); ok {
		t.Fatal("an unsigned message has an identity")
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1e9, 0))
	a := &Applier{Clock: clk}
	id, _ := messageID(msg(1, "aa"), "k.")
	first, isFirst := a.join(id)
	if !isFirst {
		t.Fatal("the first copy is not first")
	}
	again, isFirst := a.join(id)
	if isFirst || again != first {
		t.Fatal("a retransmission in flight is not joined to the first copy")
	}
	for _, other := range []*dns.Msg{msg(1, "bb"), msg(2, "aa")} {
		oid, _ := messageID(other, "k.")
		if _, isFirst := a.join(oid); !isFirst {
			t.Fatalf("another message (ID %d, MAC %s) is taken for a retransmission", other.Id, other.IsTsig().MAC)
		}
	}
	a.finish(first, dns.RcodeYXRrset)
	if rc := a.awaitFirst(context.Background(), again); rc != dns.RcodeYXRrset {
		t.Fatalf("the retransmission got %s, want the first copy's YXRRSET", dns.RcodeToString[rc])
	}
	clk.SetTime(clk.Now().Add(retransmitWindow - time.Second))
	if _, isFirst := a.join(id); isFirst {
		t.Fatal("a retransmission within the window is applied again")
	}
	clk.SetTime(clk.Now().Add(2 * time.Second))
	if _, isFirst := a.join(id); !isFirst {
		t.Fatal("a copy past the window is not a new UPDATE")
	}
}
