package factory

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnsplane/dnsplane/internal/testing/clouddnsfake"
	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
)

// signerCall is one call of a provider's signer interface, as the DNSZone controller makes it.
type signerCall func(ctx context.Context, res provider.Resolved, zoneID string) error

// TestResolve_SignerCallsGoThroughTheGuardAndAreCounted: the signers a resolved provider hands
// the DNSZone controller (Resolved.KeySigner: PowerDNS's SetKeys; Resolved.Signer: Route 53's and
// Cloud DNS's SigningState) take tokens of the credential set's rate limit and are counted in
// dnsplane_provider_requests_total, like record writes. With a budget of two requests (burst 2,
// no refill), a zone's creation and one signer call spend it: the call is counted, and the next
// one is refused by the client-side rate limit without reaching the backend. The provider
// itself is no signer: only the signers are (Capabilities and type assertions stay truthful).
func TestResolve_SignerCallsGoThroughTheGuardAndAreCounted(t *testing.T) {
	setKeys := func(ctx context.Context, res provider.Resolved, id string) error {
		if res.KeySigner == nil {
			t.Fatal("no KeySigner")
		}
		_, err := res.KeySigner.SetKeys(ctx, id, nil, provider.Denial{})
		return err
	}
	state := func(ctx context.Context, res provider.Resolved, id string) error {
		if res.Signer == nil {
			t.Fatal("no Signer")
		}
		_, err := res.Signer.SigningState(ctx, id)
		return err
	}
	ksks := func(ctx context.Context, res provider.Resolved, id string) error {
		if res.KSKRoller == nil {
			t.Fatal("no KSKRoller")
		}
		_, err := res.KSKRoller.KSKs(ctx, id)
		return err
	}
	for _, tc := range []struct {
		name, label, op string
		start           func(t *testing.T) (corev1.SecretType, map[string]string)
		call            signerCall
	}{
		{"PowerDNS SetKeys", "pdns", counting.OpSetKeys, startPDNS, setKeys},
		{"Route 53 SigningState", "aws", counting.OpSigningState, startRoute53, state},
		{"Route 53 KSKs", "aws", provider.OpKSKs, startRoute53, ksks},
		{"Cloud DNS SigningState", "google", counting.OpSigningState, startCloudDNS, state},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, data := tc.start(t)
			data[KeyRateLimitQPS], data[KeyRateLimitBurst] = "0.000001", "2"
			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "dns"}, Type: typ, Data: map[string][]byte{}}
			for k, v := range data {
				sec.Data[k] = []byte(v)
			}
			c, _ := countingSecrets(t, sec)
			m, err := counting.NewMetrics(nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &Factory{Client: c, Requests: m}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := f.Resolve(ctx, "team", "dns")
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := res.Provider.(provider.KeySigner); ok {
				t.Errorf("the guarded provider %T is a KeySigner itself", res.Provider)
			}
			if _, ok := res.Provider.(provider.ManagedSigner); ok {
				t.Errorf("the guarded provider %T is a ManagedSigner itself", res.Provider)
			}
			z, err := res.Provider.EnsureZone(ctx, provider.ZoneSpec{Name: "signed.example.test", CallerReference: "signed-1"})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.call(ctx, res, z.ID); err != nil {
				t.Fatal(err)
			}
			if got := testutil.ToFloat64(m.Requests.WithLabelValues(tc.label, tc.op, counting.CodeOK)); got != 1 {
				t.Errorf("%s counted %v times, want 1", tc.op, got)
			}
			short, cancelShort := context.WithTimeout(ctx, 2*time.Second)
			defer cancelShort()
			if err := tc.call(short, res, z.ID); err == nil || !strings.Contains(err.Error(), "client-side rate limit") {
				t.Errorf("a signer call past the credential set's budget: %v, want it refused by the client-side rate limit", err)
			}
		})
	}
}

func startPDNS(t *testing.T) (corev1.SecretType, map[string]string) {
	srv := pdnstest.Start(t)
	return TypePDNS, map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key}
}

func startRoute53(t *testing.T) (corev1.SecretType, map[string]string) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	return TypeAWS, map[string]string{"AWS_ACCESS_KEY_ID": fake.AccessKeyID, "AWS_SECRET_ACCESS_KEY": fake.SecretAccessKey,
		"AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": fake.URL}
}

func startCloudDNS(t *testing.T) (corev1.SecretType, map[string]string) {
	fake := clouddnsfake.New()
	t.Cleanup(fake.Close)
	return TypeGoogle, map[string]string{"GOOGLE_PROJECT_ID": "fake-project",
		"GOOGLE_APPLICATION_CREDENTIALS_JSON": fake.ServiceAccountJSON(), "GOOGLE_ENDPOINT_URL": fake.URL}
}
