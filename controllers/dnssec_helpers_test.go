package controllers_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/validator"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// linkedPair is a signed parent DNSZone "p" (CSK) and a signed child DNSZone "c" linked to it,
// in a cluster of their own.
type linkedPair struct {
	owner, ns, pzone, czone string
	// scheme is the child's key scheme ("": CSK).
	scheme dnsv1.DNSSECKeyScheme
	// ttl is every rollover TTL (Config.RolloverTTLs).
	ttl  time.Duration
	opts clusterOptions
	// secret is the provider Secret "dns" of ns; nil: the embedded server (dnsplane.io/local)
	// on 127.0.0.1, unless opts name another address.
	secret *corev1.Secret
	// extra are objects created with the zones.
	extra []client.Object
	// onFailure, when set, logs what helps once the test failed.
	onFailure func(c *cluster, child *dnsv1.DNSZone)
}

// start starts the cluster and creates the pair, waits until the child is Secure=True, reason
// Secure, and returns the cluster and both zones as read back.
func (p linkedPair) start(t *testing.T) (*cluster, *dnsv1.DNSZone, *dnsv1.DNSZone) {
	t.Helper()
	p.opts.RolloverTTLs = dnszone.RolloverTTLs{DNSKEY: p.ttl, MaxZone: p.ttl, ParentDS: p.ttl}
	secret := p.secret
	if secret == nil {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "dns"}, Type: factory.TypeLocal}
		if p.opts.DNSAddr == "" {
			p.opts.DNSAddr = "127.0.0.1:0"
		}
		p.opts.NameServerAddr = netip.MustParseAddr("127.0.0.1")
	}
	c := startClusterWith(t, p.owner, time.Hour, 5*time.Hour, p.opts)
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.ns}}, secret)
	parent := zoneObj(p.ns, "p", p.pzone, signed(""))
	child := zoneObj(p.ns, "c", p.czone, func(z *dnsv1.DNSZone) {
		signed(p.scheme)(z)
		z.Spec.LinkToParentDomain = true
	})
	c.create(append([]client.Object{parent, child}, p.extra...)...)
	if p.onFailure != nil {
		t.Cleanup(func() {
			if t.Failed() {
				p.onFailure(c, child)
			}
		})
	}
	c.waitCondition(child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure, 2*time.Minute)
	for _, z := range []*dnsv1.DNSZone{parent, child} {
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), z); err != nil {
			t.Fatal(err)
		}
	}
	return c, parent, child
}

// rolloverEnd checks the status.dnssec and the Secure condition of a DNSZone whose rollover
// has run through its phases: nil when they show the end the test waits for.
type rolloverEnd func(st *dnsv1.DNSSECStatus, sec *metav1.Condition) error

// rollOver asks, by annotation, for a rollover of role on DNSZone z of cluster c and waits up
// to within for its end: three phases or more seen (Publish, Activate, Withdraw), none now,
// and ended nil. It returns the phases seen and how long the rollover took.
func rollOver(t *testing.T, c *cluster, z *dnsv1.DNSZone, role string, within time.Duration, ended rolloverEnd) ([]string, time.Duration) {
	t.Helper()
	start := time.Now()
	c.annotateIn(z, dnszone.AnnotationRollover, role)
	var phases []string
	eventually(t, within, "the "+role+" rollover's end", func() error {
		got := &dnsv1.DNSZone{}
		if err := c.client.Get(c.ctx(), client.ObjectKeyFromObject(z), got); err != nil {
			return err
		}
		st := got.Status.DNSSEC
		if st == nil {
			return fmt.Errorf("no status.dnssec")
		}
		if p := st.RolloverPhase; p != "" && !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
		if len(phases) < 3 || st.RolloverPhase != "" {
			return fmt.Errorf("phases seen %v; status.dnssec %+v", phases, st)
		}
		if err := ended(st, meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionSecure)); err != nil {
			return fmt.Errorf("phases seen %v: %w", phases, err)
		}
		return nil
	})
	return phases, time.Since(start)
}

// secureWith checks the end of a rollover after which the zone is Secure=True, reason Secure,
// with n keys: and then, when more is not nil, more.
func secureWith(n int, more rolloverEnd) rolloverEnd {
	return func(st *dnsv1.DNSSECStatus, sec *metav1.Condition) error {
		if len(st.Keys) != n || sec == nil || sec.Reason != dnsv1.ReasonSecure {
			return fmt.Errorf("status.dnssec %+v; Secure %+v", st, sec)
		}
		if more == nil {
			return nil
		}
		return more(st, sec)
	}
}

// cskEnded checks the end of a CSK rollover: Secure with one key and one DS, not oldDS, and
// then served (the new key as served).
func cskEnded(oldDS []string, served rolloverEnd) rolloverEnd {
	return secureWith(1, func(st *dnsv1.DNSSECStatus, sec *metav1.Condition) error {
		if len(st.DS) != 1 || slices.Equal(st.DS, oldDS) {
			return fmt.Errorf("status.dnssec DS %v; want one, not the old %v", st.DS, oldDS)
		}
		return served(st, sec)
	})
}

// parentDSIs checks that the parent zone pzone, transferred from addr, holds the child czone's
// DS set of status.dnssec.ds.
func parentDSIs(t *testing.T, addr, pzone, czone string) rolloverEnd {
	return func(st *dnsv1.DNSSECStatus, _ *metav1.Condition) error {
		if got := dsIn(transfer(t, addr, pzone), czone); !slices.Equal(got, dsRdata(t, st.DS)) {
			return fmt.Errorf("parent DS %v, want %v", got, st.DS)
		}
		return nil
	}
}

// delvWatch is what a delv loop asks: the server at addr for zone's SOA, with ds, the DS set
// of anchor, as trust anchor.
type delvWatch struct {
	addr, anchor, zone string
	ds                 []string
}

// delvRun is a running delv loop (startDelv).
type delvRun struct {
	stop   chan struct{}
	result func() (int, int, string)
	// bad says what a refused answer is, for the failure.
	bad string
}

// startDelv runs delv as w says every 200 ms until end, counting the answers whose output ok
// refuses (bad says what they are); ok nil accepts only "fully validated" answers.
func startDelv(t *testing.T, w delvWatch, ok func(string) bool, bad string) *delvRun {
	t.Helper()
	if ok == nil {
		ok, bad = func(out string) bool { return strings.Contains(out, "fully validated") }, "not fully validated"
	}
	anchors := validator.DelvAnchors(t, w.ds)
	var mu sync.Mutex
	var total, bogus int
	var last string
	d := &delvRun{stop: make(chan struct{}), bad: bad}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-d.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out := validator.Delv(ctx, w.addr, anchors, w.anchor, w.zone, "SOA")
			cancel()
			mu.Lock()
			total++
			if !ok(out) {
				bogus++
				last = out
			}
			mu.Unlock()
		}
	}()
	d.result = func() (int, int, string) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return total, bogus, last
	}
	return d
}

// end stops the loop and fails the test, naming when, if delv got no answer or a refused one;
// it returns the number of answers.
func (d *delvRun) end(t *testing.T, when string) int {
	t.Helper()
	close(d.stop)
	total, bogus, last := d.result()
	if total == 0 || bogus != 0 {
		t.Fatalf("%s: delv %d answers, %d %s; last:\n%s", when, total, bogus, d.bad, last)
	}
	return total
}

// rollUnderDelv runs rollOver (role, within, ended) on z while a delv loop asks w, fails the
// test when delv got no answer or one not fully validated, and logs the phases, the duration
// and delv's count under what.
func rollUnderDelv(t *testing.T, c *cluster, z *dnsv1.DNSZone, role, what string, w delvWatch, within time.Duration, ended rolloverEnd) {
	t.Helper()
	d := startDelv(t, w, nil, "")
	phases, took := rollOver(t, c, z, role, within, ended)
	total := d.end(t, what)
	t.Logf("%s: phases %v in %s; delv answers %d, all fully validated", what, phases, took.Round(time.Second), total)
}
