package dnszone

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

// TestReconcileDNSSEC_SignedRoute53ZoneReadsItsStateOncePerPollInterval: a zone Route 53 (its
// fake) signs, whose parent is outside dnsplane (DSPending, nothing to wait for), costs one
// GetDNSSEC at a look and none at the reconciles within the SOA poll interval after it.
func TestReconcileDNSSEC_SignedRoute53ZoneReadsItsStateOncePerPollInterval(t *testing.T) {
	r53 := route53fake.New()
	t.Cleanup(r53.Close)
	p, err := aws.New(context.Background(), aws.Config{AccessKeyID: r53.AccessKeyID, SecretAccessKey: r53.SecretAccessKey,
		Region: "us-east-1", EndpointURL: r53.URL, DNSSECKMSKeyARN: "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hz, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "r53.example.test", CallerReference: "steady-1"})
	if err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	clock := testclock.NewFakeClock(time.Now())
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(s).Build(), Recorder: record.NewFakeRecorder(100),
		Providers: &testclient.Providers{Res: provider.Resolved{Account: "apps/aws", Provider: p, Signer: p}},
		Clock:     clock, SOAPollInterval: 30 * time.Second}
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "r53", Generation: 1},
		Spec: dnsv1.DNSZoneSpec{Zone: "r53.example.test", ProviderRef: dnsv1.SecretReference{Name: "aws"},
			DNSSEC: &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: dnsv1.KeySchemeKSKZSK}}}}
	z.Status.ZoneID = hz.ID
	reconcile := func(step string, wantReads int) {
		t.Helper()
		before := r53.Count("GetDNSSEC")
		if _, err := r.reconcileDNSSEC(ctx, z); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); c == nil || c.Reason != dnsv1.ReasonDSPending {
			t.Fatalf("%s: Secure = %+v, want DSPending", step, c)
		}
		if got := r53.Count("GetDNSSEC") - before; got != wantReads {
			t.Errorf("%s: %d GetDNSSEC requests, want %d", step, got, wantReads)
		}
	}
	reconcile("signing turned on", 3) // GetDNSSEC, then EnableSigning's own, then the state after it
	clock.Step(10 * time.Second)
	reconcile("within the poll interval", 0)
	clock.Step(25 * time.Second)
	reconcile("the poll interval after it", 1)
	reconcile("right after it", 0)
}
