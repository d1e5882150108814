package controllers_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
)

// dsIn returns the DS records of name in the records rrs, as presentation text without the
// header ("<tag> <alg> <type> <digest>"), sorted.
func dsIn(rrs []dns.RR, name string) []string {
	var out []string
	for _, rr := range rrs {
		if d, ok := rr.(*dns.DS); ok && strings.EqualFold(d.Hdr.Name, dns.Fqdn(name)) {
			out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
		}
	}
	slices.Sort(out)
	return out
}

// dsRdata is the rdata of each DS of status.dnssec.ds, sorted.
func dsRdata(t *testing.T, ds []string) []string {
	t.Helper()
	var out []string
	for _, s := range ds {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		d := rr.(*dns.DS)
		out = append(out, fmt.Sprintf("%d %d %d %s", d.KeyTag, d.Algorithm, d.DigestType, strings.ToUpper(d.Digest)))
	}
	slices.Sort(out)
	return out
}

// TestDNSSEC_DSInParentLink: a signed child DNSZone linked to a signed parent DNSZone of the
// embedded server has its DS set (status.dnssec.ds) written beside its NS set in the parent zone,
// with the DS TTL, and delv validates the child's SOA from the parent's DS as trust anchor.
func TestDNSSEC_DSInParentLink(t *testing.T) {
	ns := namespace(t, "dnssec-ds")
	const pzone, czone = "ds.dnssec.test", "c.ds.dnssec.test"
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
	})
	create(t, parent, child)
	waitCondition(t, parent, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	waitCondition(t, child, dnsv1.ConditionParentLinkCreated, metav1.ConditionTrue, dnsv1.ReasonParentLinked)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	want := dsRdata(t, child.Status.DNSSEC.DS)
	eventually(t, 20*time.Second, "the child's DS in the parent zone", func() error {
		rrs := axfr(t, pzone)
		if got := dsIn(rrs, czone); !slices.Equal(got, want) {
			return fmt.Errorf("parent AXFR DS of %s = %v, want %v", czone, got, want)
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == dns.TypeDS && rr.Header().Ttl != 3600 {
				return fmt.Errorf("DS TTL %d, want 3600", rr.Header().Ttl)
			}
		}
		return nil
	})
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	delvValidatesUnder(t, pzone+".", czone+".", parent.Status.DNSSEC.DS)
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure)

	// A CSK rollover while every write to the parent zone is held (the parent provider's writes
	// time out): the new DS never reaches the parent, ParentDS stays false, the rollover stays in
	// Publish without ParentAt, and the chain from the old DS still verifies.
	_, release := faults.holdAt(local.FaultBeforeApplyChanges, local.ZoneID(pzone))
	t.Cleanup(release)
	annotate(t, child, "dnsplane.io/rollover", "CSK")
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonRolloverInProgress)
	time.Sleep(8 * time.Second)
	if _, ks := keySecret(t, ns, "c"); ks.Rollover == nil || ks.Rollover.Phase != dnssec.PhasePublish || !ks.Rollover.ParentAt.IsZero() {
		t.Fatalf("with the parent's writes failing, rollover %+v; want Publish, no ParentAt", ks.Rollover)
	}
	if got := dsIn(axfr(t, pzone), czone); !slices.Equal(got, want) {
		t.Fatalf("with the parent's writes failing, parent DS %v; want the old %v", got, want)
	}
	// Once the parent takes writes again, both DS are written to the parent, every parent
	// server is seen answering them (the persisted ParentAt), and the zone stays Secure=True,
	// RolloverInProgress.
	release()
	eventually(t, 30*time.Second, "the new DS at the parent, observed", func() error {
		_, ks := keySecret(t, ns, "c")
		if ks.Rollover == nil || ks.Rollover.ParentAt.IsZero() {
			return fmt.Errorf("rollover %+v; want one that saw the parent's DS", ks.Rollover)
		}
		if got := dsIn(axfr(t, pzone), czone); len(got) != 2 {
			return fmt.Errorf("parent DS of %s = %v; want the old and the new", czone, got)
		}
		return nil
	})
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonRolloverInProgress)
}

// delvLoop runs delv against addr every 200 ms until stop is closed, with anchorDS (the DS set of
// anchor) as trust anchor, asking for zone's SOA; it returns how many answers it got and how
// many were not fully validated.
func delvLoop(t *testing.T, addr, anchor, zone string, anchorDS []string, stop <-chan struct{}) func() (int, int, string) {
	t.Helper()
	return delvLoopAccepting(t, addr, anchor, zone, anchorDS, stop, func(out string) bool {
		return strings.Contains(out, "fully validated")
	})
}

// delvLoopAccepting is delvLoop counting as bad the answers whose delv output ok refuses.
func delvLoopAccepting(t *testing.T, addr, anchor, zone string, anchorDS []string, stop <-chan struct{}, ok func(string) bool) func() (int, int, string) {
	t.Helper()
	hackrun.Need(t, "bind9-dnsutils", "delv")
	var b strings.Builder
	b.WriteString("trust-anchors {\n")
	for _, s := range anchorDS {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		d := rr.(*dns.DS)
		fmt.Fprintf(&b, "    %s static-ds %d %d %d \"%s\";\n", d.Hdr.Name, d.KeyTag, d.Algorithm, d.DigestType, d.Digest)
	}
	b.WriteString("};\n")
	anchors := filepath.Join(t.TempDir(), "anchors.conf")
	if err := os.WriteFile(anchors, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	var mu sync.Mutex
	var total, bogus int
	var last string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, _ := exec.CommandContext(ctx, "delv", "@"+host, "-p", port, "-a", anchors, "+root="+anchor, zone, "SOA").CombinedOutput()
			cancel()
			mu.Lock()
			total++
			if !ok(string(out)) {
				bogus++
				last = string(out)
			}
			mu.Unlock()
		}
	}()
	return func() (int, int, string) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return total, bogus, last
	}
}

// TestDNSSEC_CSKRolloverToTheEnd: with the rollover TTLs shortened to 2 s, a CSK rollover
// asked by annotation on a child DNSZone linked to a signed parent runs Publish, Activate and
// Withdraw to the end (the new key alone, its DS alone at the parent, Secure=True), while a
// delv loop anchored at the parent's DS gets no answer that is not fully validated.
func TestDNSSEC_CSKRolloverToTheEnd(t *testing.T) {
	ttl := 2 * time.Second
	c := startClusterWith(t, "dnssec-roll", time.Hour, 5*time.Hour, clusterOptions{DNSAddr: "127.0.0.1:0",
		NameServerAddr: netip.MustParseAddr("127.0.0.1"), RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}})
	ns := "roll"
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal})
	const pzone, czone = "roll.dnssec.test", "c.roll.dnssec.test"
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed("")(z)
		z.Spec.LinkToParentDomain = true
	})
	c.create(parent, child)
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, time.Minute)
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(parent), parent); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	oldDS := child.Status.DNSSEC.DS
	stop := make(chan struct{})
	result := delvLoop(t, c.dnsAddr, pzone+".", czone+".", parent.Status.DNSSEC.DS, stop)
	start := time.Now()
	eventually(t, 20*time.Second, "annotate", func() error {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), child); err != nil {
			return err
		}
		child.Annotations = map[string]string{"dnsplane.io/rollover": "CSK"}
		return c.client.Update(c.ctx(), child)
	})
	var phases []string
	eventually(t, 3*time.Minute, "the rollover's end", func() error {
		z := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(child), z); err != nil {
			return err
		}
		st := z.Status.DNSSEC
		if st == nil {
			return fmt.Errorf("no status.dnssec")
		}
		if p := st.RolloverPhase; p != "" && !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
		sec := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
		if len(phases) < 3 || st.RolloverPhase != "" || len(st.Keys) != 1 || len(st.DS) != 1 || slices.Equal(st.DS, oldDS) ||
			sec == nil || sec.Reason != dnsv1.ReasonSecure {
			return fmt.Errorf("phases seen %v; status.dnssec %+v; Secure %+v", phases, st, sec)
		}
		if got := dsIn(transfer(t, c.dnsAddr, pzone), czone); !slices.Equal(got, dsRdata(t, st.DS)) {
			return fmt.Errorf("parent DS %v, want %v", got, st.DS)
		}
		return nil
	})
	took := time.Since(start)
	close(stop)
	total, bogus, last := result()
	t.Logf("CSK rollover: phases %v in %s; delv answers %d, not validated %d", phases, took.Round(time.Second), total, bogus)
	if total == 0 || bogus != 0 {
		t.Fatalf("delv: %d answers, %d not fully validated; last:\n%s", total, bogus, last)
	}
}
