package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

// testKMSARN is a customer managed KMS key ARN of the shape the Route 53 fake takes.
const testKMSARN = "arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

// TestDNSSEC_Route53SignsWithItsKeys: a DNSZone on Route 53 (its fake) with dnssec.enabled and the
// KSK/ZSK scheme, whose provider Secret names a KMS key (AWS_DNSSEC_KMS_KEY_ARN), linked to a
// parent DNSZone of the embedded server. While Route 53 reports signing ACTION_NEEDED, the
// Secure condition is ProviderActionNeeded with Route 53's message, and no key-signing key is
// made; once that clears, the controller creates the KSK and enables signing, reports the KSK's
// DS in status.dnssec.ds and writes it into the parent link (DSPending), and the zone is Secure
// once the parent's name servers answer it. The default CSK scheme is NotSupported, saying why.
func TestDNSSEC_Route53SignsWithItsKeys(t *testing.T) {
	ns := namespace(t, "dnssec-r53")
	fake, c := startRoute53(t, "")
	create(t, secretObj(ns, "aws", c.secretType, with(c.data, "AWS_DNSSEC_KMS_KEY_ARN", testKMSARN)))
	const pzone, czone = "r53.dnssec.test", "c.r53.dnssec.test"
	const msg = "The customer managed key arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c is disabled."
	fake.DNSSECFault(route53fake.StatusActionNeeded, msg)
	parent := zoneObj(ns, "p", pzone, signed(""))
	child := zoneObj(ns, "c", czone, func(z *dnsv1.DNSZone) {
		signed(dnsv1.KeySchemeKSKZSK)(z)
		usingSecret("aws")(z)
		z.Spec.LinkToParentDomain = true
	})
	csk := zoneObj(ns, "csk", "csk.r53.dnssec.test", func(z *dnsv1.DNSZone) { signed("")(z); usingSecret("aws")(z) })
	create(t, parent, child, csk)
	cond := waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonProviderActionNeeded)
	if !strings.Contains(cond.Message, msg) {
		t.Fatalf("ProviderActionNeeded message %q does not carry Route 53's %q", cond.Message, msg)
	}
	if n := fake.Count("CreateKeySigningKey"); n != 0 {
		t.Fatalf("%d CreateKeySigningKey requests while Route 53 reports ACTION_NEEDED, want none", n)
	}
	cond = waitCondition(t, csk, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonNotSupported)
	if !strings.Contains(cond.Message, "KSKZSK") {
		t.Fatalf("NotSupported message %q does not say Route 53 signs with a KSK and a ZSK", cond.Message)
	}

	// The child's name servers resolve (a lame delegation is not linked): their addresses in a
	// zone of the embedded server.
	resolveNameServers(t, ns, child)
	fake.DNSSECFault("", "")
	waitCondition(t, child, dnsv1.ConditionSecure, metav1.ConditionTrue, dnsv1.ReasonSecure)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(child), child); err != nil {
		t.Fatal(err)
	}
	serve, keys := fake.Signing(child.Status.ZoneID)
	if serve != route53fake.ServeSigning || keys[aws.KSKName] != route53fake.StatusActive {
		t.Fatalf("Route 53 fake: ServeSignature %s, KSKs %v; want SIGNING with %s ACTIVE", serve, keys, aws.KSKName)
	}
	want := dsRdata(t, child.Status.DNSSEC.DS)
	if len(want) != 1 {
		t.Fatalf("status.dnssec.ds = %v; want the one KSK's DS", child.Status.DNSSEC.DS)
	}
	if got := dsIn(axfr(t, pzone), czone); !slices.Equal(got, want) {
		t.Fatalf("parent zone DS of %s = %v, want %v", czone, got, want)
	}
	events := zoneEventMessages(t, ns, "c")
	if !slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, dnsv1.ReasonDSPending+":") }) {
		t.Fatalf("no DSPending Event before Secure: %v", events)
	}
}

// resolveNameServers gives every name server of the cloud DNSZone z an address in a DNSZone of
// the embedded server (the name servers' parent domain), so that its delegation is not lame.
func resolveNameServers(t *testing.T, ns string, z *dnsv1.DNSZone) {
	t.Helper()
	eventually(t, 30*time.Second, "the name servers of "+z.Name, func() error {
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
			return err
		}
		if len(z.Status.NameServers) == 0 {
			return fmt.Errorf("no status.nameServers yet")
		}
		return nil
	})
	_, domain, _ := strings.Cut(z.Status.NameServers[0], ".")
	var eps []dnsv1.Endpoint
	for _, n := range z.Status.NameServers {
		eps = append(eps, dnsv1.Endpoint{DNSName: n, RecordType: "A", Targets: dnsv1.Targets{"127.0.0.1"}})
	}
	nsZone := zoneObj(ns, "ns-"+strings.ReplaceAll(domain, ".", "-"), domain, nil)
	create(t, nsZone, endpointObj(ns, "ns-addresses", eps...))
	waitCondition(t, nsZone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
}

// TestDNSSEC_CloudDNSSignsWithItsKeys: a DNSZone on Cloud DNS (its fake) with dnssec.enabled,
// the KSK/ZSK scheme and NSEC3, whose parent is outside dnsplane: the controller patches the
// managed zone's dnssecConfig on and reports DSPending with the DS of Cloud DNS's key-signing
// key (dnsKeys.list) to hand to the registrar; NSEC3 iterations Cloud DNS does not take are
// NotSupported.
func TestDNSSEC_CloudDNSSignsWithItsKeys(t *testing.T) {
	ns := namespace(t, "dnssec-gcp")
	fake, c := startCloudDNS(t)
	create(t, secretObj(ns, "gcp", c.secretType, c.data))
	z := zoneObj(ns, "z", "z.gcp.dnssec.test", func(z *dnsv1.DNSZone) {
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: dnsv1.KeySchemeKSKZSK},
			Denial: dnsv1.DNSSECDenial{Type: dnsv1.DenialNSEC3}}
		usingSecret("gcp")(z)
	})
	iter := zoneObj(ns, "iter", "iter.gcp.dnssec.test", func(z *dnsv1.DNSZone) {
		z.Spec.DNSSEC = &dnsv1.DNSSEC{Enabled: true, Keys: dnsv1.DNSSECKeys{Scheme: dnsv1.KeySchemeKSKZSK},
			Denial: dnsv1.DNSSECDenial{Type: dnsv1.DenialNSEC3, NSEC3: &dnsv1.NSEC3Parameters{Iterations: 5}}}
		usingSecret("gcp")(z)
	})
	create(t, z, iter)
	cond := waitCondition(t, z, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonDSPending)
	if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(z), z); err != nil {
		t.Fatal(err)
	}
	if z.Status.DNSSEC == nil || len(z.Status.DNSSEC.DS) != 1 || !strings.Contains(cond.Message, "registrar") {
		t.Fatalf("status.dnssec %+v, Secure %q; want the KSK's DS to hand to the registrar", z.Status.DNSSEC, cond.Message)
	}
	if n := fake.Count("managedZones.patch"); n != 1 {
		t.Fatalf("managedZones.patch requests = %d, want 1", n)
	}
	cond = waitCondition(t, iter, dnsv1.ConditionSecure, metav1.ConditionFalse, dnsv1.ReasonNotSupported)
	if !strings.Contains(cond.Message, "nsec3") {
		t.Fatalf("NotSupported message %q does not name denial.nsec3", cond.Message)
	}
}
