package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
)

// k8s is a client of a real kube-apiserver (envtest) with the generated CRDs installed; restCfg
// is its config.
var (
	k8s     client.Client
	restCfg *rest.Config
)

func TestMain(m *testing.M) {
	os.Exit(envtest.Run(m, filepath.Join("..", ".."), envtest.Options{}, func(cfg *rest.Config) (func() error, error) {
		restCfg = cfg
		var err error
		k8s, err = client.New(cfg, client.Options{Scheme: scheme.Scheme})
		return nil, err
	}))
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// object parses one YAML manifest; the namespace defaults to "default".
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("parse manifest: %v\n%s", err, manifest)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace("default")
	}
	return u
}

// expectInvalid asserts that the API server refused the object as Invalid with a message that
// contains want.
func expectInvalid(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admission accepted the object; want a refusal containing %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error containing %q, got %v", want, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("refusal message\n  %v\ndoes not contain %q", err, want)
	}
}

// accepts creates obj through cl and fails the test, naming what obj is, when admission
// refuses it.
func accepts(t *testing.T, cl client.Client, obj client.Object, what string) {
	t.Helper()
	if err := cl.Create(ctx(t), obj); err != nil {
		t.Fatalf("%s was refused: %v", what, err)
	}
}

// typedClient is a client of the test API server that sends dnsplane's Go types as they
// marshal (no unstructured manifest).
func typedClient(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refusal is a value admission refuses, named, and a part of the message it refuses it with.
type refusal struct{ name, value, want string }

// refusesEach creates, in a subtest of each refusal, the object of manifest (a format: the
// refusal's index, then its value) and checks that admission refuses it as Invalid with a
// message containing its want.
func refusesEach(t *testing.T, manifest string, cases []refusal) {
	t.Helper()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectInvalid(t, k8s.Create(ctx(t), object(t, fmt.Sprintf(manifest, i, tc.value))), tc.want)
		})
	}
}

// manifest is a dnsplane.io/v1alpha1 manifest of kind named name, with the lines spec.
func manifest(kind, name, spec string) string {
	return "\napiVersion: dnsplane.io/v1alpha1\nkind: " + kind + "\nmetadata: {name: " + name + "}\n" + spec
}

// zoneManifest is a DNSZone manifest named name of zone with the provider Secret creds and the
// further spec fields extra (flow form: ", field: value", or ""); name and extra may hold the
// formats of refusesEach.
func zoneManifest(name, zone, extra string) string {
	return manifest("DNSZone", name, "spec: {zone: "+zone+", providerRef: {name: creds}"+extra+"}")
}

// endpointsManifest is a DNSEndpoint manifest named name whose spec.endpoints is the YAML
// list endpoints, without its first "- " (each further item on a line "  - {...}"); name
// and endpoints may hold the formats of refusesEach.
func endpointsManifest(name, endpoints string) string {
	return manifest("DNSEndpoint", name, "spec:\n  endpoints:\n  - "+endpoints)
}

// gslbWith is a Gslb manifest named name of an Ingress, in zone gslb, with the spec line
// field; name and field may hold the formats of refusesEach.
func gslbWith(name, field string) string {
	return manifest("Gslb", name, "spec:\n  resourceRef: {kind: Ingress, name: app}\n  zoneRef: {name: gslb}\n  "+field)
}

func TestAdmission_RefusesBadObjects(t *testing.T) {
	cases := []struct {
		name, manifest, want string
	}{{
		name:     "zone that is not a domain name",
		manifest: zoneManifest("bad-zone", "Not_A_Domain", ""),
		want:     "zone must be a lower-case DNS name",
	}, {
		name:     "zone with a trailing dot",
		manifest: zoneManifest("bad-zone-dot", "c1.example.com.", ""),
		want:     "zone must be a lower-case DNS name",
	}, {
		name: "zone without providerRef",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-zone-provider}
spec: {zone: c1.example.com}`,
		want: "spec.providerRef: Required value",
	}, {
		name: "unknown strategy",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-strategy}
spec: {strategy: Sometimes}`,
		want: `Unsupported value: "Sometimes"`,
	}, {
		name: "DNSRecord endpoint outside its rootHost",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSRecord
metadata: {name: bad-roothost}
spec:
  rootHost: app.example.com
  endpoints:
  - {dnsName: other.example.com, recordType: A, targets: [192.0.2.1]}`,
		want: "every endpoint's dnsName must be rootHost or a name below it",
	}, {
		name: "DNSRecord endpoint that only ends with rootHost's text",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSRecord
metadata: {name: bad-roothost-suffix}
spec:
  rootHost: app.example.com
  endpoints:
  - {dnsName: myapp.example.com, recordType: A, targets: [192.0.2.1]}`,
		want: "every endpoint's dnsName must be rootHost or a name below it",
	}, {
		name:     "Gslb failover without a primary geo tag",
		manifest: gslbWith("bad-failover", "strategy: {type: failover}"),
		want:     "failover needs primaryGeoTag",
	}, {
		name: "Gslb on a Service without hosts",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: bad-service}
spec:
  resourceRef: {kind: Service, name: app}
  zoneRef: {name: gslb}`,
		want: "hosts is required when resourceRef is a Service",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectInvalid(t, k8s.Create(ctx(t), object(t, tc.manifest)), tc.want)
		})
	}
	refusesEach(t, endpointsManifest("bad-endpoint-%d", "%s"), []refusal{
		{"bad target in the second endpoint, after a good one", `{dnsName: www.example.com, recordType: A, targets: [192.0.2.1]}
  - {dnsName: mail.example.com, recordType: MX, targets: ["10"]}`,
			"spec.endpoints[1]: Invalid value: every target of an MX record must be '<preference> <host>', e.g. '10 mail.example.com'"},
		{"CAA record without a value", `{dnsName: example.com, recordType: CAA, targets: ["0 issue"]}`, `every target of a CAA record must be '<flags> <tag> <value>', e.g. '0 issue "letsencrypt.org"'`},
		{"unknown record type", `{dnsName: www.example.com, recordType: SPF, targets: [x]}`, `Unsupported value: "SPF"`},
		{"negative TTL", `{dnsName: www.example.com, recordType: A, recordTTL: -1, targets: [192.0.2.1]}`, "recordTTL: Invalid value: -1: spec.endpoints[0].recordTTL in body should be greater than or equal to 0"},
		{"A record with a host name target", `{dnsName: www.example.com, recordType: A, targets: [hello]}`, "every target of an A record must be an IPv4 address"},
		{"A record with an IPv6 target", `{dnsName: www.example.com, recordType: A, targets: ["2001:db8::1"]}`, "every target of an A record must be an IPv4 address"},
		{"AAAA record with an IPv4 target", `{dnsName: www.example.com, recordType: AAAA, targets: [192.0.2.1]}`, "every target of an AAAA record must be an IPv6 address"},
		{"CNAME with two targets", `{dnsName: www.example.com, recordType: CNAME, targets: [a.example.com, b.example.com]}`, "a CNAME record has exactly one target"},
		{"NS record with an address target", `{dnsName: sub.example.com, recordType: NS, targets: ["ns 1.example.com"]}`, "every target of a CNAME, NS or PTR record must be a host name"},
		{"MX record without a preference", `{dnsName: example.com, recordType: MX, targets: [mail.example.com]}`, "every target of an MX record must be '<preference> <host>'"},
		{"SRV record with a missing port", `{dnsName: _sip._tcp.example.com, recordType: SRV, targets: ["0 5 sip.example.com"]}`, "every target of an SRV record must be"},
		{"DS record with an odd number of digest digits", `{dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccdd"]}`, "every target of a DS record must be"},
		{"DS record with a digest that is not hex", `{dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 zz"]}`, "every target of a DS record must be"},
		{"CNAME without a target", `{dnsName: www.example.com, recordType: CNAME}`, "a CNAME record has exactly one target"},
		{"CNAME with one target that is not a host name", `{dnsName: www.example.com, recordType: CNAME, targets: ["a b"]}`, "every target of a CNAME, NS or PTR record must be a host name"},
		{"PTR record with a space in its target", `{dnsName: 1.2.0.192.in-addr.arpa, recordType: PTR, targets: ["host .example.com"]}`, "every target of a CNAME, NS or PTR record must be a host name"},
		{"dnsName with a space", `{dnsName: "www example.com", recordType: A, targets: [192.0.2.1]}`, "dnsName must be a DNS name"},
	})
}

func TestAdmission_ImmutableFields(t *testing.T) {
	c := ctx(t)
	zone := object(t, zoneManifest("immutable-zone", "c1.example.com", ""))
	accepts(t, k8s, zone, "the DNSZone")

	changed := zone.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "c2.example.com", "spec", "zone")
	expectInvalid(t, k8s.Update(c, changed), "zone is immutable")

	// Adopting later is allowed once: unset -> set.
	adopted := zone.DeepCopy()
	_ = unstructured.SetNestedField(adopted.Object, "Z123", "spec", "zoneID")
	if err := k8s.Update(c, adopted); err != nil {
		t.Fatalf("set zoneID on a zone without one: %v", err)
	}
	rezoned := adopted.DeepCopy()
	_ = unstructured.SetNestedField(rezoned.Object, "Z456", "spec", "zoneID")
	expectInvalid(t, k8s.Update(c, rezoned), "zoneID is immutable once set")
	unset := adopted.DeepCopy()
	unstructured.RemoveNestedField(unset.Object, "spec", "zoneID")
	expectInvalid(t, k8s.Update(c, unset), "zoneID is immutable once set")

	record := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: DNSRecord
metadata: {name: immutable-record}
spec:
  rootHost: app.example.com
  endpoints:
  - {dnsName: app.example.com, recordType: A, targets: [192.0.2.1]}`)
	accepts(t, k8s, record, "the DNSRecord")
	moved := record.DeepCopy()
	_ = unstructured.SetNestedField(moved.Object, "web.example.com", "spec", "rootHost")
	_ = unstructured.SetNestedSlice(moved.Object, []any{}, "spec", "endpoints")
	expectInvalid(t, k8s.Update(c, moved), "rootHost is immutable")
}

func TestAdmission_AcceptsExternalDNSManifest(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "external-dns-dnsendpoint.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, string(raw))
	accepts(t, k8s, obj, "an external-dns DNSEndpoint with only apiVersion changed")
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := k8s.Get(ctx(t), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	want, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
	have, _, _ := unstructured.NestedSlice(got.Object, "spec", "endpoints")
	if fmt.Sprint(want) != fmt.Sprint(have) {
		t.Fatalf("endpoints did not round-trip:\nwant %v\nhave %v", want, have)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "spec", "strategy"); s != "FullSync" {
		t.Fatalf("strategy defaulted to %q, want FullSync", s)
	}
}

// TestAdmission_GoGslbWithoutStrategyIsDefaulted: a Gslb built in Go with no
// strategy is accepted, and the schema defaults it to roundRobin with a 30 s TTL. The zero
// GslbStrategy is left out of the JSON (omitzero); sent as {"type": ""}, the Enum refused it.
func TestAdmission_GoGslbWithoutStrategyIsDefaulted(t *testing.T) {
	c := typedClient(t)
	g := &v1alpha1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "go-no-strategy"}, Spec: v1alpha1.GslbSpec{
		ResourceRef: v1alpha1.ResourceReference{Kind: v1alpha1.ResourceKindService, Name: "web"},
		Hosts:       []string{"app.example.com"}, ZoneRef: v1alpha1.ZoneReference{Name: "gslb"},
	}}
	accepts(t, c, g, "a Gslb built in Go without a strategy")
	if got := g.Spec.Strategy; got.Type != v1alpha1.GslbRoundRobin || got.DNSTTLSeconds != 30 {
		t.Fatalf("strategy defaulted to %+v, want roundRobin with a 30 s TTL", got)
	}
}

// TestAdmission_RefusesBadGslbHealthChecks: every rule of spec.healthCheck, each
// refused with a message that names it.
func TestAdmission_RefusesBadGslbHealthChecks(t *testing.T) {
	refusesEach(t, gslbWith("bad-health-%d", "healthCheck: %s"), []refusal{
		{"path with TCP", `{protocol: TCP, port: 443, path: /healthz}`, "path is only for protocol HTTP or HTTPS"},
		{"expectedStatus with TCP", `{protocol: TCP, port: 443, expectedStatus: ['200']}`, "expectedStatus is only for protocol HTTP or HTTPS"},
		{"host with TCP", `{protocol: TCP, port: 443, host: app.example.com}`, "host is only for protocol HTTP or HTTPS"},
		{"insecureSkipVerify with HTTP", `{protocol: HTTP, port: 80, insecureSkipVerify: true}`, "insecureSkipVerify is only for protocol HTTPS"},
		{"timeout above the interval", `{port: 80, intervalSeconds: 5, timeoutSeconds: 6}`, "timeoutSeconds must not exceed intervalSeconds"},
		{"default timeout above a 1 s interval", `{port: 80, intervalSeconds: 1}`, "timeoutSeconds must not exceed intervalSeconds"},
		{"failureThreshold 0", `{port: 80, failureThreshold: 0}`, "failureThreshold in body should be greater than or equal to 1"},
		{"successThreshold 0", `{port: 80, successThreshold: 0}`, "successThreshold in body should be greater than or equal to 1"},
		{"intervalSeconds 0", `{port: 80, intervalSeconds: 0, timeoutSeconds: 1}`, "intervalSeconds in body should be greater than or equal to 1"},
		{"timeoutSeconds 0", `{port: 80, timeoutSeconds: 0}`, "timeoutSeconds in body should be greater than or equal to 1"},
		{"intervalSeconds over an hour", `{port: 80, intervalSeconds: 3601}`, "intervalSeconds in body should be less than or equal to 3600"},
		{"negative isolationHoldSeconds", `{port: 80, isolationHoldSeconds: -1}`, "isolationHoldSeconds in body should be greater than or equal to 0"},
		{"isolationHoldSeconds over a day", `{port: 80, isolationHoldSeconds: 86401}`, "isolationHoldSeconds in body should be less than or equal to 86400"},
		{"unknown protocol", `{protocol: UDP, port: 53}`, "supported values: \"HTTP\", \"HTTPS\", \"TCP\""},
		{"unknown afterIsolationHold", `{port: 80, afterIsolationHold: Failover}`, "supported values: \"Hold\", \"OwnProbes\""},
		{"port 0", `{port: 0}`, "port in body should be greater than or equal to 1"},
		{"port over 65535", `{port: 65536}`, "port in body should be less than or equal to 65535"},
		{"no port", `{protocol: HTTP}`, "spec.healthCheck.port: Required value"},
		{"relative path", `{port: 80, path: healthz}`, "spec.healthCheck.path in body should match"},
		{"path with a space", `{port: 80, path: '/health z'}`, "spec.healthCheck.path in body should match"},
		{"host that is not a DNS name", `{port: 80, host: App_Example}`, "spec.healthCheck.host in body should match"},
		{"expectedStatus range upside down", `{port: 80, expectedStatus: ['399-200']}`, "an expectedStatus range must be low-high with low <= high"},
		{"expectedStatus 600", `{port: 80, expectedStatus: ['600']}`, "expectedStatus[0] in body should match"},
		{"expectedStatus 2xx", `{port: 80, expectedStatus: ['2xx']}`, "expectedStatus[0] in body should match"},
	})
}

// TestAdmission_GslbHealthCheckDefaults: a health check that gives only its port is
// an HTTP probe every 10 s with a 2 s timeout, 3 failures down, 1 success up, and a 300 s
// isolation hold held for ever (afterIsolationHold Hold); a 1 s interval with a 1 s timeout and a 0 s hold are accepted as given.
func TestAdmission_GslbHealthCheckDefaults(t *testing.T) {
	c := typedClient(t)
	g := &v1alpha1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "health-defaults"}, Spec: v1alpha1.GslbSpec{
		ResourceRef: v1alpha1.ResourceReference{Kind: v1alpha1.ResourceKindService, Name: "web"},
		Hosts:       []string{"app.example.com"}, ZoneRef: v1alpha1.ZoneReference{Name: "gslb"},
		HealthCheck: &v1alpha1.GslbHealthCheck{Port: 8080},
	}}
	accepts(t, c, g, "a health check with only a port")
	hc := g.Spec.HealthCheck
	if hc.Protocol != v1alpha1.HealthCheckHTTP || hc.IntervalSeconds != 10 || hc.TimeoutSeconds != 2 || hc.FailureThreshold != 3 ||
		hc.SuccessThreshold != 1 || hc.IsolationHoldSeconds == nil || *hc.IsolationHoldSeconds != 300 || hc.Path != "" || hc.ExpectedStatus != nil ||
		hc.AfterIsolationHold != v1alpha1.AfterIsolationHoldHold {
		t.Fatalf("health check defaulted to %+v", hc)
	}

	zero := int32(0)
	g2 := &v1alpha1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "health-fast"}, Spec: v1alpha1.GslbSpec{
		ResourceRef: v1alpha1.ResourceReference{Kind: v1alpha1.ResourceKindService, Name: "web"},
		Hosts:       []string{"app.example.com"}, ZoneRef: v1alpha1.ZoneReference{Name: "gslb"},
		HealthCheck: &v1alpha1.GslbHealthCheck{Protocol: v1alpha1.HealthCheckHTTPS, Port: 443, Path: "/healthz?full=1", Host: "app.example.com",
			ExpectedStatus: []string{"200", "300-399"}, IntervalSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 100, SuccessThreshold: 100,
			InsecureSkipVerify: true, IsolationHoldSeconds: &zero, AfterIsolationHold: v1alpha1.AfterIsolationHoldOwnProbes},
	}}
	accepts(t, c, g2, "a health check at its bounds")
	if h := g2.Spec.HealthCheck.IsolationHoldSeconds; h == nil || *h != 0 || g2.Spec.HealthCheck.AfterIsolationHold != v1alpha1.AfterIsolationHoldOwnProbes {
		t.Fatalf("isolationHoldSeconds 0 became %v, afterIsolationHold %q", h, g2.Spec.HealthCheck.AfterIsolationHold)
	}

	tcp := object(t, gslbWith("health-tcp", "healthCheck: {protocol: TCP, port: 443, insecureSkipVerify: false}"))
	accepts(t, k8s, tcp, "a TCP health check")
}

// TestAdmission_AcceptsLargestObject pins that the size bounds and the CEL rules fit together: an
// object at every bound passes the API server's runtime cost budget.
func TestAdmission_AcceptsLargestObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: dnsplane.io/v1alpha1\nkind: DNSRecord\nmetadata: {name: largest}\nspec:\n  rootHost: app.example.com\n  endpoints:\n")
	for i := 0; i < v1alpha1.MaxEndpoints; i++ {
		fmt.Fprintf(&b, "  - dnsName: h%d.app.example.com\n    recordType: A\n    targets:\n", i)
		for j := 0; j < v1alpha1.MaxTargets; j++ {
			fmt.Fprintf(&b, "    - 10.%d.%d.%d\n", i/256, i%256, j)
		}
	}
	accepts(t, k8s, object(t, b.String()), "a DNSRecord at the size bounds")
}

func TestAdmission_AcceptsSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			obj := object(t, doc)
			if obj.GetAPIVersion() != "dnsplane.io/v1alpha1" {
				continue
			}
			obj.SetNamespace("default")
			t.Run(filepath.Base(f)+"/"+obj.GetName(), func(t *testing.T) {
				if err := k8s.Create(ctx(t), obj, client.DryRunAll); err != nil {
					t.Fatalf("sample refused: %v", err)
				}
			})
		}
	}
}

// TestAdmission_AcceptsEveryTypeWellFormed: the one rule over every record type's targets lets
// each type's usual form through, and an endpoint without targets of any type but CNAME.
func TestAdmission_AcceptsEveryTypeWellFormed(t *testing.T) {
	manifest := endpointsManifest("every-type", `{dnsName: a.example.com, recordType: A, targets: [192.0.2.1, 192.0.2.2]}
  - {dnsName: a.example.com, recordType: AAAA, targets: ["2001:db8::1"]}
  - {dnsName: c.example.com, recordType: CNAME, targets: [a.example.com]}
  - {dnsName: sub.example.com, recordType: NS, targets: [ns1.example.com, ns2.example.com.]}
  - {dnsName: 1.2.0.192.in-addr.arpa, recordType: PTR, targets: [a.example.com]}
  - {dnsName: example.com, recordType: MX, targets: ["10 mail.example.com"]}
  - {dnsName: _sip._tcp.example.com, recordType: SRV, targets: ["0 5 5060 sip.example.com"]}
  - {dnsName: example.com, recordType: CAA, targets: ["0 issue \"letsencrypt.org\""]}
  - {dnsName: example.com, recordType: TXT, targets: ["v=spf1 -all", "any text: at all"]}
  - {dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd"]}
  - {dnsName: empty.example.com, recordType: A}
  - {dnsName: empty.example.com, recordType: TXT}`)
	accepts(t, k8s, object(t, manifest), "well-formed endpoints of every type")
}

// TestAdmission_AcceptsWellFormedDS: the DS rule lets through the digest forms in use (SHA-256
// in lower or upper case).
func TestAdmission_AcceptsWellFormedDS(t *testing.T) {
	manifest := endpointsManifest("good-ds", `{dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd", "2371 13 2 1F987CC6583E92DF0890718C42A5B3A5B7E7DA8C8D6B8C1E7E0A6A3A9F2D6B1C"]}`)
	accepts(t, k8s, object(t, manifest), "a well-formed DS")
}

// TestAdmission_DocumentedDNSEndpointSpecIsAccepted: docs/api.md's
// DNSEndpoint spec block showed `policy: ""`, which the CRD's enum refuses. Every scalar field of
// that block (endpoints filled in) is sent to the API server as the doc spells it.
func TestAdmission_DocumentedDNSEndpointSpecIsAccepted(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "## DNSEndpoint:")
	if start < 0 {
		t.Fatal("docs/api.md has no DNSEndpoint section")
	}
	block, _, _ := strings.Cut(doc[start:], "status:")
	_, block, _ = strings.Cut(block, "```yaml\nspec:\n")
	var fields []string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.TrimSpace(line)
		if f == "" || strings.HasPrefix(f, "endpoints:") || strings.HasPrefix(f, "approvedPlan:") {
			continue // endpoints is a placeholder there; approvedPlan's "" is a free string
		}
		fields = append(fields, "  "+f)
	}
	if len(fields) < 3 {
		t.Fatalf("found only %v in docs/api.md's DNSEndpoint spec block", fields)
	}
	obj := object(t, `apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata:
  name: documented
spec:
  endpoints: [{dnsName: www.example.test, recordType: A, targets: [192.0.2.1]}]
`+strings.Join(fields, "\n")+"\n")
	if err := k8s.Create(ctx(t), obj); err != nil {
		t.Fatalf("docs/api.md's DNSEndpoint spec (%s) is refused: %v", strings.Join(fields, "; "), err)
	}
	bad := object(t, `apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata:
  name: empty-policy
spec:
  endpoints: [{dnsName: www.example.test, recordType: A, targets: [192.0.2.1]}]
  policy: ""
`)
	expectInvalid(t, k8s.Create(ctx(t), bad), "spec.policy")
}

// TestAdmission_GslbGeoStrategy: strategy geo needs geoRegions and defaultGeoTag, the
// two fields are refused under any other type, every region key is an ISO 3166-1 alpha-2
// code, continent:XX with one of MaxMind's seven continent codes, or a canonical CIDR, and no
// geo tag of primaryGeoTag, defaultGeoTag or a weights key has upper case.
func TestAdmission_GslbGeoStrategy(t *testing.T) {
	const keyMsg = "a geoRegions key must be an ISO 3166-1 alpha-2 country code"
	refusesEach(t, gslbWith("bad-geo-%d", "strategy: %s"), []refusal{
		{"geo without geoRegions", `{type: geo, defaultGeoTag: eu}`, "geo needs geoRegions"},
		{"geo with empty geoRegions", `{type: geo, geoRegions: {}, defaultGeoTag: eu}`, "geo needs geoRegions"},
		{"geo without defaultGeoTag", `{type: geo, geoRegions: {DE: eu}}`, "geo needs defaultGeoTag"},
		{"geoRegions under roundRobin", `{type: roundRobin, geoRegions: {DE: eu}}`, "geoRegions and defaultGeoTag are only for type geo"},
		{"defaultGeoTag under failover", `{type: failover, primaryGeoTag: eu, defaultGeoTag: eu}`, "geoRegions and defaultGeoTag are only for type geo"},
		{"lower-case country", `{type: geo, geoRegions: {de: eu}, defaultGeoTag: eu}`, keyMsg},
		{"three-letter country", `{type: geo, geoRegions: {DEU: eu}, defaultGeoTag: eu}`, keyMsg},
		{"unknown continent", `{type: geo, geoRegions: {'continent:XX': eu}, defaultGeoTag: eu}`, keyMsg},
		{"continent without prefix", `{type: geo, geoRegions: {EUR: eu}, defaultGeoTag: eu}`, keyMsg},
		{"lower-case continent", `{type: geo, geoRegions: {'continent:eu': eu}, defaultGeoTag: eu}`, keyMsg},
		{"CIDR with host bits", `{type: geo, geoRegions: {'203.0.113.1/24': ap}, defaultGeoTag: eu}`, keyMsg},
		{"CIDR prefix too long", `{type: geo, geoRegions: {'203.0.113.0/33': ap}, defaultGeoTag: eu}`, keyMsg},
		{"address without prefix", `{type: geo, geoRegions: {'203.0.113.0': ap}, defaultGeoTag: eu}`, keyMsg},
		{"upper-case IPv6 CIDR", `{type: geo, geoRegions: {'2001:DB8::/32': ap}, defaultGeoTag: eu}`, keyMsg},
		{"non-canonical IPv6 CIDR", `{type: geo, geoRegions: {'2001:0db8::/32': ap}, defaultGeoTag: eu}`, keyMsg},
		{"empty geo tag", `{type: geo, geoRegions: {DE: ''}, defaultGeoTag: eu}`, "a geoRegions value is a geo tag of 1 to 63 characters"},
		{"unknown type", `{type: nearest}`, "supported values: \"roundRobin\", \"failover\", \"weighted\", \"geo\""},
		{"upper-case defaultGeoTag", `{type: geo, geoRegions: {DE: eu}, defaultGeoTag: EU}`, "spec.strategy.defaultGeoTag"},
		{"upper-case primaryGeoTag", `{type: failover, primaryGeoTag: EU}`, "spec.strategy.primaryGeoTag"},
		{"upper-case weights key", `{type: weighted, weights: {EU: 1}}`, "a weights key is a geo tag: lower case"},
	})

	// A typical geoRegions map, and a map at its 256-key bound (countries, continents and CIDRs of
	// both families), pass within the CEL cost budget.
	ok := object(t, gslbWith("geo-example", `strategy:
    type: geo
    geoRegions: {DE: eu, 'continent:NA': us, '203.0.113.0/24': ap, '2001:db8:ffff:ffff:ffff:ffff:ffff:ff00/120': ap}
    defaultGeoTag: eu`))
	accepts(t, k8s, ok, "the issue's geo example")
	regions := map[string]any{}
	for _, c := range []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"} {
		regions["continent:"+c] = strings.Repeat("t", 63)
	}
	for i := 0; len(regions) < 256; i++ {
		switch i % 3 {
		case 0:
			regions[string(rune('A'+i/26%26))+string(rune('A'+i%26))] = "eu"
		case 1:
			regions[fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)] = "us"
		default:
			regions[fmt.Sprintf("2001:db8:ffff:ffff:ffff:ffff:%x:0/112", i)] = "ap"
		}
	}
	big := object(t, gslbWith("geo-largest", "strategy: {type: geo, defaultGeoTag: eu}"))
	if err := unstructured.SetNestedMap(big.Object, regions, "spec", "strategy", "geoRegions"); err != nil {
		t.Fatal(err)
	}
	accepts(t, k8s, big, "a geo strategy with 256 regions")
	too := big.DeepCopy()
	too.SetName("geo-too-many")
	too.SetResourceVersion("")
	regions["ZZ"] = "eu"
	if err := unstructured.SetNestedMap(too.Object, regions, "spec", "strategy", "geoRegions"); err != nil {
		t.Fatal(err)
	}
	expectInvalid(t, k8s.Create(ctx(t), too), "must have at most 256 items")
}

// TestAdmission_DynamicUpdatesDefaults pins the dynamic-updates API (docs/api.md): a binding with only its
// keySecretRef may change the ACME DNS-01 names' TXT records, and nothing else.
func TestAdmission_DynamicUpdatesDefaults(t *testing.T) {
	c := typedClient(t)
	z := &v1alpha1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dynupdate-defaults"}, Spec: v1alpha1.DNSZoneSpec{
		Zone: "c1.example.com", ProviderRef: v1alpha1.SecretReference{Name: "creds"},
		DynamicUpdates: []v1alpha1.DynamicUpdate{{KeySecretRef: v1alpha1.SecretReference{Name: "acme-key"}},
			{KeySecretRef: v1alpha1.SecretReference{Name: "other"}, Names: []string{"@", "*.web", "_acme-challenge.*", "a.*.b"}, Types: []v1alpha1.DynamicUpdateType{"A", "AAAA", "TXT"}}},
	}}
	accepts(t, c, z, "a DNSZone with dynamicUpdates")
	got := z.Spec.DynamicUpdates[0]
	if len(got.Names) != 1 || got.Names[0] != "_acme-challenge.*" || len(got.Types) != 1 || got.Types[0] != "TXT" {
		t.Fatalf("defaults: names %q, types %q; want [_acme-challenge.*] and [TXT]", got.Names, got.Types)
	}
	if n := z.Spec.DynamicUpdates[1].Names; len(n) != 4 {
		t.Fatalf("explicit names were changed: %q", n)
	}
}

// TestAdmission_RefusesBadDynamicUpdates pins what admission refuses in spec.dynamicUpdates.
func TestAdmission_RefusesBadDynamicUpdates(t *testing.T) {
	refusesEach(t, `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-dynupdate-%d}
spec:
  zone: c1.example.com
  providerRef: {name: creds}
  dynamicUpdates: %s`, []refusal{
		{"no keySecretRef", `[{names: ["_acme-challenge.*"]}]`, "keySecretRef: Required value"},
		{"empty Secret name", `[{keySecretRef: {name: ""}}]`, "keySecretRef.name"},
		{"a key bound twice", `[{keySecretRef: {name: k}}, {keySecretRef: {name: k}, types: [A]}]`, "each keySecretRef may be bound once per DNSZone"},
		{"an absolute name", `[{keySecretRef: {name: k}, names: ["_acme-challenge.example.com."]}]`, "names[0]"},
		{"an empty label", `[{keySecretRef: {name: k}, names: ["a..b"]}]`, "names[0]"},
		{"a partial wildcard label", `[{keySecretRef: {name: k}, names: ["_acme-*"]}]`, "names[0]"},
		{"no names", `[{keySecretRef: {name: k}, names: []}]`, "names: Invalid value"},
		{"NS", `[{keySecretRef: {name: k}, types: [NS]}]`, "types[0]: Unsupported value"},
		{"SOA", `[{keySecretRef: {name: k}, types: [SOA]}]`, "types[0]: Unsupported value"},
		{"no types", `[{keySecretRef: {name: k}, types: []}]`, "types: Invalid value"},
		{"a type twice", `[{keySecretRef: {name: k}, types: [TXT, TXT]}]`, "Duplicate value"},
	})
}

// TestAdmission_AcceptsLargestDynamicUpdates: a DNSZone with spec.dynamicUpdates at every
// bound (16 bindings of 32 names of 250 bytes and 8 types) passes the CEL cost budget.
func TestAdmission_AcceptsLargestDynamicUpdates(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: dnsplane.io/v1alpha1\nkind: DNSZone\nmetadata: {name: largest-dynupdates}\nspec:\n  zone: c1.example.com\n  providerRef: {name: creds}\n  dynamicUpdates:\n")
	label := strings.Repeat("a", 61)
	for i := range 16 {
		fmt.Fprintf(&b, "  - keySecretRef: {name: key-%d}\n    types: [A, AAAA, CNAME, TXT, MX, SRV, CAA, PTR]\n    names:\n", i)
		for j := range 32 {
			fmt.Fprintf(&b, "    - %s%02d.%s.%s.%s.*\n", label[:59], j, label, label, label) // 250 bytes
		}
	}
	accepts(t, k8s, object(t, b.String()), "a DNSZone with dynamicUpdates at the bounds")
}
