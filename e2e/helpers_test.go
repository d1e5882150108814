//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

type (
	metav1Condition = metav1.Condition
	corev1EventList = corev1.EventList
)

func eventTime(ev corev1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// eventually retries check every 200ms until it returns nil, and returns how long that took; it
// fails t after timeout raised to testrun.HangTimeout when shorter (a wait only catches hangs).
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(max(timeout, testrun.HangTimeout))
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, max(timeout, testrun.HangTimeout), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// apply creates obj, or updates its spec when it exists (tests are re-runnable on one test bed).
func (c *cluster) apply(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		err := c.C().Create(ctx(t), obj)
		if apierrors.IsAlreadyExists(err) {
			// Read and write again when a controller wrote the object in between (its
			// finalizer or status): the Update carries the resourceVersion it read.
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cur := obj.DeepCopyObject().(client.Object)
				if err := c.C().Get(ctx(t), client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				// Keep what the controllers own in metadata: an Update without the finalizers
				// would drop them, and a deletion right after would skip the cleanup they guard
				// (kubectl apply keeps them the same way).
				obj.SetResourceVersion(cur.GetResourceVersion())
				obj.SetFinalizers(cur.GetFinalizers())
				obj.SetOwnerReferences(cur.GetOwnerReferences())
				return c.C().Update(ctx(t), obj)
			})
		}
		if err != nil {
			t.Fatalf("cluster %s: apply %T %s/%s: %v", c.geo, obj, obj.GetNamespace(), obj.GetName(), err)
		}
	}
}

// update re-reads obj, applies mutate and writes it, retrying on conflicts.
func update[T client.Object](t *testing.T, c *cluster, obj T, mutate func(T)) {
	t.Helper()
	eventually(t, 20*time.Second, "update "+obj.GetName(), func() error {
		if err := c.C().Get(ctx(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate(obj)
		return c.C().Update(ctx(t), obj)
	})
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// waitCondition waits until obj (re-read into obj) has condition typ with status and reason
// (reason "" = any), and returns it with how long it took.
func (c *cluster) waitCondition(t *testing.T, obj client.Object, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) (metav1.Condition, time.Duration) {
	t.Helper()
	var got metav1.Condition
	took := eventually(t, timeout, fmt.Sprintf("cluster %s: %T %s/%s %s=%s %s", c.geo, obj, obj.GetNamespace(), obj.GetName(), typ, status, reason), func() error {
		cond, err := conditions.Check(ctx(t), c.C(), obj, typ, conditions.Want{Status: status, Reason: reason, Current: true})
		if cond != nil {
			got = *cond
		}
		return err
	})
	return got, took
}

// waitEvent waits for an Event with reason on obj, as `kubectl describe` shows it.
func (c *cluster) waitEvent(t *testing.T, obj client.Object, reason string, timeout time.Duration) corev1.Event {
	t.Helper()
	if obj.GetUID() == "" {
		if err := c.C().Get(ctx(t), client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Fatalf("cluster %s: get %s/%s: %v", c.geo, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	var found corev1.Event
	eventually(t, timeout, fmt.Sprintf("cluster %s: Event %s on %s/%s", c.geo, reason, obj.GetNamespace(), obj.GetName()), func() error {
		var list corev1.EventList
		if err := c.C().List(ctx(t), &list, client.InNamespace(obj.GetNamespace())); err != nil {
			return err
		}
		var seen []string
		for _, ev := range list.Items {
			if ev.InvolvedObject.Name != obj.GetName() || ev.InvolvedObject.UID != obj.GetUID() {
				continue
			}
			if ev.Reason == reason {
				found = ev
				return nil
			}
			seen = append(seen, ev.Reason)
		}
		return fmt.Errorf("events seen: %v", seen)
	})
	return found
}

// --- DNS, as dig sees it ---

// query asks addr (no recursion, UDP then TCP on truncation).
func query(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err == nil && r.Truncated {
		r, _, err = (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, addr)
	}
	return r, err
}

// answerA returns the A targets addr answers authoritatively for name, sorted.
func answerA(addr, name string) ([]string, error) {
	r, err := query(addr, name, dns.TypeA)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	if len(out) > 0 && !r.Authoritative {
		return out, fmt.Errorf("answer for %s from %s is not authoritative", name, addr)
	}
	return out, nil
}

// waitServed waits until addr answers name with exactly want (nil = nothing), and returns how long
// that took.
func waitServed(t *testing.T, timeout time.Duration, addr, name string, want []string) time.Duration {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	return eventually(t, timeout, fmt.Sprintf("%s A at %s = %v", name, addr, want), func() error {
		got, err := answerA(addr, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("served %v", got)
		}
		return nil
	})
}

// axfr transfers zone from addr.
func axfr(addr, zone string) ([]dns.RR, error) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	ch, err := (&dns.Transfer{DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second}).In(m, addr)
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return nil, env.Error
		}
		out = append(out, env.RR...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty AXFR of %s from %s", zone, addr)
	}
	return out[:len(out)-1], nil // the closing SOA repeats the first
}

var heartbeatRE = regexp.MustCompile(`heartbeat=[0-9]+`)

// normalized renders an AXFR as sorted lines, without the SOA serial and heartbeat values, so
// that two transfers compare equal when nothing but time passed.
func normalized(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if soa, ok := rr.(*dns.SOA); ok {
			c := *soa
			c.Serial = 0
			rr = &c
		}
		s := heartbeatRE.ReplaceAllString(rr.String(), "heartbeat=*")
		out = append(out, strings.ReplaceAll(s, "\t", " "))
	}
	slices.Sort(out)
	return out
}

func diff(before, after []string) (removed, added []string) {
	in := func(s []string, x string) bool { _, ok := slices.BinarySearch(s, x); return ok }
	for _, l := range before {
		if !in(after, l) {
			removed = append(removed, l)
		}
	}
	for _, l := range after {
		if !in(before, l) {
			added = append(added, l)
		}
	}
	return removed, added
}

// duplicates returns lines that occur more than once.
func duplicates(lines []string) []string {
	var out []string
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			out = append(out, lines[i])
		}
	}
	return out
}

// --- the platform: fixtures shared by the scenarios, created once and idempotently ---

const (
	rootZone    = "e2e.test"
	platformNS  = "platform"    // the platform team's namespace: root zone, PowerDNS Secret
	clusterNS   = "cluster-dns" // the cluster admin's namespace: the cluster's base domain
	pdnsSecret  = "pdns"
	localSecret = "dns-local"
)

var (
	platformOnce sync.Once
	platformOK   bool
	rootZoneID   string
)

// clusterZone is cluster c's base domain, c<N>.e2e.test.
func (c *cluster) clusterZone() string { return fmt.Sprintf("c%d.%s", c.idx+1, rootZone) }

func pdnsSecretObj(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pdnsSecret}, Type: "dnsplane.io/pdns",
		StringData: map[string]string{
			"PDNS_API_URL":     suite.pdns.APIURL,
			"PDNS_API_KEY":     suite.pdns.Key,
			"PDNS_NAMESERVERS": "ns1." + rootZone,
			"DNS_ADDRESS":      suite.pdns.DNSAddr,
		}}
}

func localSecretObj(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: localSecret}, Type: "dnsplane.io/local"}
}

func rootZoneObj(zoneID string) *dnsv1.DNSZone {
	return &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: platformNS, Name: "root"}, Spec: dnsv1.DNSZoneSpec{
		Zone: rootZone, ProviderRef: dnsv1.SecretReference{Name: pdnsSecret}, ZoneID: zoneID,
		Delegation:       &dnsv1.Delegation{AllowedNamespaces: []string{clusterNS, gslbNS}},
		PreserveOnDelete: true,
	}}
}

// platform makes the root zone e2e.test on PowerDNS: cluster 1's DNSZone creates it, every other
// cluster adopts it by zoneID, each in namespace "platform". It returns the time it took.
func platform(t *testing.T) {
	t.Helper()
	platformOnce.Do(func() {
		first := suite.clusters[0]
		start := time.Now()
		first.apply(t, namespace(platformNS), pdnsSecretObj(platformNS), rootZoneObj(""))
		z := rootZoneObj("")
		first.waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
		rootZoneID = z.Status.ZoneID
		if rootZoneID == "" {
			t.Fatalf("root DNSZone is Ready without status.zoneID")
		}
		t.Logf("platform: root zone %s created on PowerDNS by cluster %s (zoneID %q) in %s", rootZone, first.geo, rootZoneID, time.Since(start).Round(10*time.Millisecond))
		for _, c := range suite.clusters[1:] {
			c.apply(t, namespace(platformNS), pdnsSecretObj(platformNS), rootZoneObj(rootZoneID))
		}
		for _, c := range suite.clusters[1:] {
			_, took := c.waitCondition(t, rootZoneObj(""), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 60*time.Second)
			t.Logf("platform: cluster %s adopted %s in %s", c.geo, rootZoneID, took.Round(10*time.Millisecond))
		}
		platformOK = true
	})
	if !platformOK {
		t.Fatal("the platform root zone could not be set up (see the first test's failure)")
	}
}

func clusterZoneObj(c *cluster) *dnsv1.DNSZone {
	return &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: "cluster"}, Spec: dnsv1.DNSZoneSpec{
		Zone: c.clusterZone(), ProviderRef: dnsv1.SecretReference{Name: localSecret},
		LinkToParentDomain: true,
		ParentRef:          &dnsv1.ZoneReference{Name: "root", Namespace: platformNS},
	}}
}

var (
	onboardOnce sync.Once
	onboardOK   bool
)

// onboard gives every cluster its base domain c<N>.e2e.test on its embedded server, delegated
// from the root zone, and waits until each is Ready. It returns how long each took.
func onboard(t *testing.T) map[string]time.Duration {
	t.Helper()
	platform(t)
	took := map[string]time.Duration{}
	onboardOnce.Do(func() {
		start := time.Now()
		for _, c := range suite.clusters {
			c.apply(t, namespace(clusterNS), localSecretObj(clusterNS), clusterZoneObj(c))
		}
		for _, c := range suite.clusters {
			c.waitCondition(t, clusterZoneObj(c), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 90*time.Second)
			took[c.geo] = time.Since(start)
		}
		onboardOK = true
	})
	if !onboardOK {
		t.Fatal("onboarding did not complete (see TestOnboarding)")
	}
	return took
}

// referral asks PowerDNS (the root zone's server) for name and returns the delegation it refers
// to: the NS names and their glue addresses.
func referral(addr, name string) (ns []string, glue map[string]string, err error) {
	r, err := query(addr, name, dns.TypeA)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Answer) > 0 {
		return nil, nil, fmt.Errorf("answered %v, want a referral", r.Answer)
	}
	glue = map[string]string{}
	for _, rr := range r.Ns {
		if n, ok := rr.(*dns.NS); ok {
			ns = append(ns, strings.TrimSuffix(n.Ns, "."))
		}
	}
	for _, rr := range r.Extra {
		if a, ok := rr.(*dns.A); ok {
			glue[strings.TrimSuffix(a.Hdr.Name, ".")] = a.A.String()
		}
	}
	if len(ns) == 0 {
		return nil, nil, fmt.Errorf("no referral: rcode %s, authority %v", dns.RcodeToString[r.Rcode], r.Ns)
	}
	return ns, glue, nil
}

type clientObject = client.Object

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// gslbNS is the namespace of TestGslbFailover's zone gslb.e2e.test, inside the root zone: the
// root DNSZone lists it in delegation.allowedNamespaces (docs/api.md, "Tenancy": a zone inside
// another namespace's zone needs that zone's permission).
const gslbNS = "apps"

// kubectlWait runs `kubectl wait <args>` against cluster c, as a user or a pipeline would, and
// returns its output; it fails the test when kubectl fails (the condition not met within the
// --timeout in args). kubectl is $E2E_KIND_KUBECTL when set, else the repository's bin/kubectl.
func kubectlWait(t *testing.T, c *cluster, args ...string) string {
	t.Helper()
	bin := cmp.Or(os.Getenv("E2E_KIND_KUBECTL"), filepath.Join(suite.repo, "bin", "kubectl"))
	cmd := exec.Command(bin, append([]string{"wait"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kcfg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cluster %s: kubectl wait %s: %v\n%s", c.geo, strings.Join(args, " "), err, out)
	}
	return string(out)
}
