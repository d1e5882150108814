package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/rfc2136solver"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// TestReplicas_DynamicUpdateServedByEveryReplica: a DNS-01 UPDATE across
// replicas: two managers with leader election and the zone store in ConfigMaps (127.0.0.33 and
// .34). cert-manager's own rfc2136 solver (hack/rfc2136-solver) sends its Present to the
// follower, which does not write zones: the follower answers NOERROR once the leader wrote the
// record, and both replicas serve the TXT; CleanUp through the follower, and neither serves it.
func TestReplicas_DynamicUpdateServedByEveryReplica(t *testing.T) {
	usableLoopback(t, "127.0.0.33", "127.0.0.34")
	bin, err := rfc2136solver.Build(context.Background(), "../..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := envtest.Start(t, "../..")
	dnsService(t, cfg)
	leader, others := leaderOf(t, startReplica(t, cfg, "127.0.0.33"), startReplica(t, cfg, "127.0.0.34"))
	follower := others[0]
	admin, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testrun.HangTimeout)
	defer cancel()
	const ns, secret = "team", "YWNtZS1rZXktc2VjcmV0LWZvci1yZXBsaWNhcy10ZXN0cw=="
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: dnsv1.DNSZoneSpec{
		Zone: "acme.replicas.test", ProviderRef: dnsv1.SecretReference{Name: "dns"},
		DynamicUpdates: []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}},
	}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme-key"}, Type: dnsv1.SecretTypeTSIG,
			StringData: map[string]string{dnsv1.TSIGSecretName: "acme-key", dnsv1.TSIGSecretAlgorithm: "hmac-sha256", dnsv1.TSIGSecretSecret: secret}},
		z,
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testrun.Eventually(t, time.Minute, "the DNSZone Ready with its keys resolved", func() error {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		for _, c := range []string{dnsv1.ConditionReady, dnsv1.ConditionDynamicUpdatesReady} {
			if !meta.IsStatusConditionTrue(z.Status.Conditions, c) {
				return fmt.Errorf("%s not True: %v", c, z.Status.Conditions)
			}
		}
		return nil
	})
	ch := rfc2136solver.Challenge{Nameserver: follower.addr, Zone: "acme.replicas.test.", FQDN: "_acme-challenge.acme.replicas.test.",
		Value: "replica-token", KeyName: "acme-key", Algorithm: "HMACSHA256", Secret: secret}
	// The follower learns the key from its own keys controller; until then it answers NOTAUTH.
	start := time.Now()
	testrun.Eventually(t, time.Minute, "Present through the follower", func() error { return rfc2136solver.Present(ctx, bin, ch) })
	t.Logf("UPDATE to NOERROR through the follower: %s", time.Since(start).Round(time.Millisecond))
	for _, r := range []*replica{leader, follower} {
		testrun.Eventually(t, 10*time.Second, "the TXT served by "+r.addr, func() error { return txtServed(r.addr, ch.FQDN, "replica-token") })
	}
	if err := rfc2136solver.CleanUp(ctx, bin, ch); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{leader, follower} {
		testrun.Eventually(t, 10*time.Second, "the TXT gone from "+r.addr, func() error { return txtServed(r.addr, ch.FQDN) })
	}
}

// txtServed reports whether addr answers name's TXT with exactly want (none: no TXT).
func txtServed(addr, name string, want ...string) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return err
	}
	var got []string
	for _, rr := range r.Answer {
		if t, ok := rr.(*dns.TXT); ok {
			got = append(got, strings.Join(t.Txt, ""))
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s TXT at %s: %s %q, want %q", name, addr, dns.RcodeToString[r.Rcode], got, want)
	}
	return nil
}
