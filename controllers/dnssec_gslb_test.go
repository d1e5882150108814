package controllers_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnszone"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/validator"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// startGslbUnbound runs a validating Unbound anchored at anchorDS that asks servers for zone and
// caches nothing longer than maxTTL, until the test ends, and returns its address.
func startGslbUnbound(t *testing.T, zone, anchorDS string, maxTTL time.Duration, servers ...string) string {
	t.Helper()
	u := validator.Unbound{Host: unboundHost, Anchor: anchorDS, MaxTTL: maxTTL, AggressiveNSEC: true, Probe: zone}
	for _, s := range servers {
		u.Stubs = append(u.Stubs, validator.Stub{Zone: zone, Addr: s})
	}
	return validator.StartUnbound(t, u)
}

// directClient is a client of c's API server that reads Secrets without a cache, as kubectl
// does.
func directClient(t *testing.T, c *cluster) client.Client {
	t.Helper()
	cl, err := client.New(c.cfg, client.Options{Scheme: c.scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// gslbKeySecret is the Gslb zone's key Secret apps/gslb-dnssec.
var gslbKeySecret = client.ObjectKey{Namespace: "apps", Name: "gslb" + dnszone.KeySecretSuffix}

// readKeys returns the keyset.json of the Gslb zone's key Secret at cl (nil when there is none).
func readKeys(t *testing.T, cl client.Client) []byte {
	t.Helper()
	var sec corev1.Secret
	err := cl.Get(ctxT(t), gslbKeySecret, &sec)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Errorf("read key Secret: %v", err)
		return nil
	}
	return sec.Data[dnssec.SecretKey]
}

// copyKeys copies keyset.json to the Gslb zone's key Secret at cl, as an admin's secret-sync
// tool does: a Secret of that name and data, without the source's metadata (owner, UID).
func copyKeys(t *testing.T, cl client.Client, raw []byte) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: gslbKeySecret.Namespace, Name: gslbKeySecret.Name},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{dnssec.SecretKey: raw}}
	err := cl.Create(ctxT(t), sec)
	if apierrors.IsAlreadyExists(err) {
		updateIn(t, cl, sec, func() { sec.Data = map[string][]byte{dnssec.SecretKey: raw} })
		return
	}
	if err != nil {
		t.Errorf("copy key Secret: %v", err)
	}
}

// keyState is a key set's keys (tag and state) and rollover phase: what a server signs with,
// without the machine's bookkeeping (when a phase was seen served).
func keyState(t *testing.T, raw []byte) string {
	t.Helper()
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		t.Errorf("key set: %v", err)
		return ""
	}
	var out []string
	for _, k := range ks.Keys {
		out = append(out, fmt.Sprintf("%s %d %s", k.Role, k.Tag(), k.State))
	}
	slices.Sort(out)
	if ks.Rollover != nil {
		out = append(out, "phase "+string(ks.Rollover.Role)+" "+string(ks.Rollover.Phase))
	}
	return strings.Join(out, ", ")
}

// keyCopier copies the driver's key set to the follower whenever the keys or the phase change,
// holding each such copy back for hold first; it records every change of the driver's keys or
// phase made while the follower did not have them yet (the driver moved on without the copy).
type keyCopier struct {
	mu       sync.Mutex
	copies   int
	advanced []string
}

func (k *keyCopier) run(t *testing.T, from, to client.Client, hold time.Duration, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	have := keyState(t, readKeys(t, to))
	sleep := func(d time.Duration) bool {
		select {
		case <-stop:
			return false
		case <-time.After(d):
			return true
		}
	}
	go func() {
		defer close(done)
		for sleep(200 * time.Millisecond) {
			raw := readKeys(t, from)
			st := keyState(t, raw)
			if st == have {
				continue
			}
			if !sleep(hold) {
				return
			}
			raw2 := readKeys(t, from)
			k.mu.Lock()
			if st2 := keyState(t, raw2); st2 != st {
				k.advanced = append(k.advanced, fmt.Sprintf("[%s] -> [%s] while the follower had [%s]", st, st2, have))
			}
			k.copies++
			k.mu.Unlock()
			copyKeys(t, to, raw2)
			have = keyState(t, raw2)
		}
	}()
	return done
}

// secureOf returns z's Secure condition at c (nil when none).
func secureOf(t *testing.T, c *cluster, z *dnsv1.DNSZone) *metav1.Condition {
	t.Helper()
	got := &dnsv1.DNSZone{}
	if err := c.client.Get(ctxT(t), client.ObjectKeyFromObject(z), got); err != nil {
		t.Fatal(err)
	}
	*z = *got
	return meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionSecure)
}

// secureAt asks resolver for name/qtype and says why the answer is not secure (nil: AD set, NOERROR).
func secureAt(resolver, name string, qtype uint16) error {
	r, err := askResolver(resolver, name, qtype)
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess || !r.AuthenticatedData || len(r.Answer) == 0 {
		return fmt.Errorf("%s %s at %s: %s AD=%t, %d answers", name, dns.TypeToString[qtype], resolver, dns.RcodeToString[r.Rcode], r.AuthenticatedData, len(r.Answer))
	}
	return nil
}

// TestDNSSEC_GslbZoneValidatesAtEveryCluster: the Gslb zone gslb.test is served by two
// clusters (eu and us, each its own API server, manager and embedded server). eu generates the
// keys (KSKZSK); us follows a copied key set (spec.dnssec.keys.source: Copied). us makes no key
// of its own and reports KeysNotCopied until the admin copies eu's key Secret, and eu stays
// Signing, naming us's server, until us serves its keys. Then validating Unbounds anchored at
// eu's DS, one asking eu, one us, one both, answer securely; a ZSK rollover on eu runs to its
// end while a copier holds each new key set back from us for a while before copying it (an
// admin's sync tool): eu never moves on while us lacks the keys, and a loop asking the three
// Unbounds every 200 ms gets no answer that is not secure.
func TestDNSSEC_GslbZoneValidatesAtEveryCluster(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	ttl := 2 * time.Second
	port := strconv.Itoa(ports.TCPUDP(t, "127.0.0.11", "127.0.0.12"))
	euAddr, usAddr := "127.0.0.11:"+port, "127.0.0.12:"+port
	opts := clusterOptions{RolloverTTLs: dnszone.RolloverTTLs{DNSKEY: ttl, MaxZone: ttl, ParentDS: ttl}}
	eu := startGslbClusterWith(t, "eu", euAddr, []gslb.Peer{{GeoTag: "us", Addr: usAddr}}, opts, "192.0.2.1")
	us := startGslbClusterWith(t, "us", usAddr, []gslb.Peer{{GeoTag: "eu", Addr: euAddr}}, opts, "192.0.2.2")
	for _, g := range []*gslbCluster{eu, us} {
		g.create(&dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{"app.gslb.test"},
			ZoneRef: dnsv1.ZoneReference{Name: "gslb"}, Strategy: dnsv1.GslbStrategy{Type: "roundRobin", DNSTTLSeconds: 5}}})
	}
	waitServed(t, "both clusters' IPs", []string{"192.0.2.1", "192.0.2.2"}, eu, us)
	euKeys, usKeys := directClient(t, eu.cluster), directClient(t, us.cluster)
	driver := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "gslb"}}
	follower := driver.DeepCopy()
	updateIn(t, eu.client, driver, func() {
		driver.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: dnsv1.KeySchemeKSKZSK}}
	})
	updateIn(t, us.client, follower, func() {
		follower.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: dnsv1.KeySchemeKSKZSK, Source: dnsv1.KeySourceCopied}}
	})

	t.Run("before the copy", func(t *testing.T) {
		us.waitCondition(follower, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonKeysNotCopied, 30*time.Second)
		eventually(t, 30*time.Second, "eu's keys", func() error {
			if readKeys(t, euKeys) == nil {
				return errors.New("no key Secret at eu")
			}
			return nil
		})
		// eu signs with its keys (its signer reads them within 10 s), and stays Signing: us's
		// server answers the zone unsigned.
		eventually(t, 30*time.Second, "eu Signing, naming us's server", func() error {
			sec := secureOf(t, eu.cluster, driver)
			if sec == nil || sec.Reason != dnsv1.ReasonSigning || !strings.Contains(sec.Message, usAddr) {
				return fmt.Errorf("eu's Secure condition %+v; want Signing naming us's server %s, which serves no keys yet", sec, usAddr)
			}
			return nil
		})
		time.Sleep(3 * time.Second) // more reconciles of both zones, at the 200 ms SOA poll
		if sec := secureOf(t, eu.cluster, driver); sec.Reason != dnsv1.ReasonSigning {
			t.Fatalf("eu's Secure condition %+v before us has its keys", sec)
		}
		if raw := readKeys(t, usKeys); raw != nil {
			t.Fatalf("the follower made keys of its own: %s", keyState(t, raw))
		}
	})

	copyKeys(t, usKeys, readKeys(t, euKeys))
	eu.waitCondition(driver, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending, time.Minute)
	us.waitCondition(follower, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending, time.Minute)
	if !bytes.Equal(readKeys(t, usKeys), readKeys(t, euKeys)) {
		t.Fatal("the follower's key Secret differs from the copy")
	}
	secureOf(t, eu.cluster, driver)
	if st := secureOf(t, us.cluster, follower); len(follower.Status.DNSSEC.DS) != 0 {
		t.Fatalf("the follower publishes a DS set %v (%+v); only the key driver does", follower.Status.DNSSEC.DS, st)
	}
	anchor := driver.Status.DNSSEC.DS[0]
	resolvers := []string{startGslbUnbound(t, "gslb.test", anchor, ttl, euAddr), startGslbUnbound(t, "gslb.test", anchor, ttl, usAddr),
		startGslbUnbound(t, "gslb.test", anchor, ttl, euAddr, usAddr)}
	for _, r := range resolvers {
		for _, q := range []struct {
			name  string
			qtype uint16
		}{{"gslb.test", dns.TypeSOA}, {"gslb.test", dns.TypeDNSKEY}, {"app.gslb.test", dns.TypeA}} {
			if err := secureAt(r, q.name, q.qtype); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("ZSK rollover", func(t *testing.T) {
		stop := make(chan struct{})
		var results []func() resolverTally
		for _, r := range resolvers {
			results = append(results, resolverLoop(r, "gslb.test", stop))
		}
		var cp keyCopier
		copied := cp.run(t, euKeys, usKeys, 4*ttl, stop)
		start := time.Now()
		old := activeTag(driver.Status.DNSSEC, "ZSK")
		updateIn(t, eu.client, driver, func() { driver.Annotations = map[string]string{dnszone.AnnotationRollover: "ZSK"} })
		var phases []string
		eventually(t, 5*time.Minute, "the ZSK rollover's end at eu and us", func() error {
			sec := secureOf(t, eu.cluster, driver)
			st := driver.Status.DNSSEC
			if st == nil {
				return errors.New("no status.dnssec")
			}
			if p := st.RolloverPhase; p != "" && !slices.Contains(phases, p) {
				phases = append(phases, p)
			}
			if len(phases) < 3 || st.RolloverPhase != "" || len(st.Keys) != 2 || activeTag(st, "ZSK") == old || sec.Reason != dnsv1.ReasonDSPending {
				return fmt.Errorf("phases seen %v; status.dnssec %+v; Secure %+v", phases, st, sec)
			}
			if !bytes.Equal(readKeys(t, usKeys), readKeys(t, euKeys)) {
				return errors.New("the follower has not got the last key set yet")
			}
			if fsec := secureOf(t, us.cluster, follower); fsec.Reason != dnsv1.ReasonDSPending {
				return fmt.Errorf("follower Secure %+v", fsec)
			}
			return nil
		})
		took := time.Since(start)
		time.Sleep(2 * ttl) // the last versions may be cached one more TTL: keep asking through it
		close(stop)
		<-copied
		var total resolverTally
		for i, res := range results {
			tally := res()
			t.Logf("resolver %d: %d queries, %d not secure, %d without an answer", i, tally.queries, tally.bad, tally.timeouts)
			total.queries, total.bad, total.timeouts = total.queries+tally.queries, total.bad+tally.bad, total.timeouts+tally.timeouts
			if tally.bad != 0 {
				total.last = tally.last
			}
		}
		t.Logf("ZSK rollover: phases %v in %s, %d copies (each held back %s); the Unbounds (eu, us, both) answered %d queries: %d not secure, %d without an answer",
			phases, took.Round(100*time.Millisecond), cp.copies, 4*ttl, total.queries, total.bad, total.timeouts)
		if len(cp.advanced) > 0 {
			t.Errorf("the driver moved on while the follower had not got its keys: %v", cp.advanced)
		}
		if total.queries == 0 || total.bad != 0 {
			t.Fatalf("%d of %d answers not secure; last: %s", total.bad, total.queries, total.last)
		}
	})
}

// TestDNSSEC_CopiedKeysAreFollowedNeverWritten: a DNSZone with keys.source Copied and no key
// Secret is KeysNotCopied and gets none; with a key set copied in (one CSK) the embedded server
// signs with it (DSPending; status.dnssec lists the key and no DS set); a rollover annotation
// is removed and changes no key; enabled: false leaves it Unsigning until a copy records the
// turn-off done, then Unsigned. The controller never writes the Secret.
func TestDNSSEC_CopiedKeysAreFollowedNeverWritten(t *testing.T) {
	ns := namespace(t, "dnssec-copied")
	z := zoneObj(ns, "z", "copied.dnssec.test", func(z *dnsv1.DNSZone) {
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Source: dnsv1.KeySourceCopied}}
	})
	create(t, z)
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonKeysNotCopied)
	time.Sleep(time.Second) // more reconciles at the 200 ms SOA poll
	key := client.ObjectKey{Namespace: ns, Name: "z" + dnszone.KeySecretSuffix}
	if err := k8s.Get(ctxT(t), key, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("key Secret of a zone that follows copied keys: %v; want none made", err)
	}
	k, err := dnssec.Generate("copied.dnssec.test", dns.ECDSAP256SHA256, dnssec.RoleCSK, dnssec.Active, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ks := dnssec.KeySet{Zone: "copied.dnssec.test.", Keys: []dnssec.Key{k}}
	raw, err := ks.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{dnssec.SecretKey: raw}}
	create(t, sec)
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	if st := z.Status.DNSSEC; st == nil || len(st.Keys) != 1 || st.Keys[0].Tag != int32(k.Tag()) || len(st.DS) != 0 || st.NextRollover != nil {
		t.Fatalf("status.dnssec %+v; want the copied CSK %d, no DS set, no next rollover", st, k.Tag())
	}
	updateIn(t, k8s, z, func() { z.Annotations = map[string]string{dnszone.AnnotationRollover: "CSK"} })
	eventually(t, 30*time.Second, "the rollover annotation removed", func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		if _, ok := z.Annotations[dnszone.AnnotationRollover]; ok {
			return errors.New("annotation still there")
		}
		return nil
	})
	updateIn(t, k8s, z, func() { z.Spec.DNSSEC.Enabled = false })
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigning)
	unchanged := func(want []byte) {
		t.Helper()
		got := &corev1.Secret{}
		if err := k8s.Get(ctxT(t), key, got); err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != sec.ResourceVersion || !bytes.Equal(got.Data[dnssec.SecretKey], want) {
			t.Fatalf("the key Secret was written (resourceVersion %s, the test's %s): %s", got.ResourceVersion, sec.ResourceVersion, keyState(t, got.Data[dnssec.SecretKey]))
		}
	}
	unchanged(raw)
	now := time.Now().UTC().Truncate(time.Second)
	ks.Unsigning = &dnssec.Unsigning{Since: now, ParentGoneAt: now, Done: true}
	if raw, err = ks.Marshal(); err != nil {
		t.Fatal(err)
	}
	updateIn(t, k8s, sec, func() { sec.Data = map[string][]byte{dnssec.SecretKey: raw} })
	waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonUnsigned)
	time.Sleep(time.Second)
	unchanged(raw)
}
