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

func TestAdmission_RefusesBadObjects(t *testing.T) {
	cases := []struct {
		name, manifest, want string
	}{{
		name: "zone that is not a domain name",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-zone}
spec: {zone: Not_A_Domain, providerRef: {name: creds}}`,
		want: "zone must be a lower-case DNS name",
	}, {
		name: "zone with a trailing dot",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-zone-dot}
spec: {zone: c1.example.com., providerRef: {name: creds}}`,
		want: "zone must be a lower-case DNS name",
	}, {
		name: "zone without providerRef",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-zone-provider}
spec: {zone: c1.example.com}`,
		want: "spec.providerRef: Required value",
	}, {
		name: "negative TTL",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-ttl}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: A, recordTTL: -1, targets: [192.0.2.1]}`,
		want: "recordTTL: Invalid value: -1: spec.endpoints[0].recordTTL in body should be greater than or equal to 0",
	}, {
		name: "A record with a host name target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-a}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: A, targets: [hello]}`,
		want: "every target of an A record must be an IPv4 address",
	}, {
		name: "A record with an IPv6 target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-a6}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: A, targets: ["2001:db8::1"]}`,
		want: "every target of an A record must be an IPv4 address",
	}, {
		name: "AAAA record with an IPv4 target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-aaaa}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: AAAA, targets: [192.0.2.1]}`,
		want: "every target of an AAAA record must be an IPv6 address",
	}, {
		name: "CNAME with two targets",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-cname}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: CNAME, targets: [a.example.com, b.example.com]}`,
		want: "a CNAME record has exactly one target",
	}, {
		name: "NS record with an address target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-ns}
spec:
  endpoints:
  - {dnsName: sub.example.com, recordType: NS, targets: ["ns 1.example.com"]}`,
		want: "every target of a CNAME, NS or PTR record must be a host name",
	}, {
		name: "MX record without a preference",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-mx}
spec:
  endpoints:
  - {dnsName: example.com, recordType: MX, targets: [mail.example.com]}`,
		want: "every target of an MX record must be '<preference> <host>'",
	}, {
		name: "SRV record with a missing port",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-srv}
spec:
  endpoints:
  - {dnsName: _sip._tcp.example.com, recordType: SRV, targets: ["0 5 sip.example.com"]}`,
		want: "every target of an SRV record must be",
	}, {
		name: "DS record with an odd number of digest digits",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-ds-odd}
spec:
  endpoints:
  - {dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccdd"]}`,
		want: "every target of a DS record must be",
	}, {
		name: "DS record with a digest that is not hex",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-ds-hex}
spec:
  endpoints:
  - {dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 zz"]}`,
		want: "every target of a DS record must be",
	}, {
		name: "CNAME without a target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-cname-none}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: CNAME}`,
		want: "a CNAME record has exactly one target",
	}, {
		name: "CNAME with one target that is not a host name",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-cname-host}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: CNAME, targets: ["a b"]}`,
		want: "every target of a CNAME, NS or PTR record must be a host name",
	}, {
		name: "PTR record with a space in its target",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-ptr}
spec:
  endpoints:
  - {dnsName: 1.2.0.192.in-addr.arpa, recordType: PTR, targets: ["host .example.com"]}`,
		want: "every target of a CNAME, NS or PTR record must be a host name",
	}, {
		name: "CAA record without a value",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-caa}
spec:
  endpoints:
  - {dnsName: example.com, recordType: CAA, targets: ["0 issue"]}`,
		want: `every target of a CAA record must be '<flags> <tag> <value>', e.g. '0 issue "letsencrypt.org"'`,
	}, {
		name: "bad target in the second endpoint, after a good one",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-second}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: A, targets: [192.0.2.1]}
  - {dnsName: mail.example.com, recordType: MX, targets: ["10"]}`,
		want: "spec.endpoints[1]: Invalid value: every target of an MX record must be '<preference> <host>', e.g. '10 mail.example.com'",
	}, {
		name: "unknown record type",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-type}
spec:
  endpoints:
  - {dnsName: www.example.com, recordType: SPF, targets: [x]}`,
		want: `Unsupported value: "SPF"`,
	}, {
		name: "dnsName with a space",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: bad-name}
spec:
  endpoints:
  - {dnsName: "www example.com", recordType: A, targets: [192.0.2.1]}`,
		want: "dnsName must be a DNS name",
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
		name: "Gslb failover without a primary geo tag",
		manifest: `
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: bad-failover}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  strategy: {type: failover}`,
		want: "failover needs primaryGeoTag",
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
}

func TestAdmission_ImmutableFields(t *testing.T) {
	c := ctx(t)
	zone := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: immutable-zone}
spec: {zone: c1.example.com, providerRef: {name: creds}}`)
	if err := k8s.Create(c, zone); err != nil {
		t.Fatalf("create DNSZone: %v", err)
	}

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
	if err := k8s.Create(c, record); err != nil {
		t.Fatalf("create DNSRecord: %v", err)
	}
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
	if err := k8s.Create(ctx(t), obj); err != nil {
		t.Fatalf("an external-dns DNSEndpoint with only apiVersion changed was refused: %v", err)
	}
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
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "go-no-strategy"}, Spec: v1alpha1.GslbSpec{
		ResourceRef: v1alpha1.ResourceReference{Kind: v1alpha1.ResourceKindService, Name: "web"},
		Hosts:       []string{"app.example.com"}, ZoneRef: v1alpha1.ZoneReference{Name: "gslb"},
	}}
	if err := c.Create(ctx(t), g); err != nil {
		t.Fatalf("a Gslb built in Go without a strategy was refused: %v", err)
	}
	if got := g.Spec.Strategy; got.Type != v1alpha1.GslbRoundRobin || got.DNSTTLSeconds != 30 {
		t.Fatalf("strategy defaulted to %+v, want roundRobin with a 30 s TTL", got)
	}
}

// TestAdmission_RefusesBadGslbHealthChecks: every rule of spec.healthCheck, each
// refused with a message that names it.
func TestAdmission_RefusesBadGslbHealthChecks(t *testing.T) {
	for i, tc := range []struct{ name, healthCheck, want string }{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := fmt.Sprintf(`
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: bad-health-%d}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  healthCheck: %s`, i, tc.healthCheck)
			expectInvalid(t, k8s.Create(ctx(t), object(t, manifest)), tc.want)
		})
	}
}

// TestAdmission_GslbHealthCheckDefaults: a health check that gives only its port is
// an HTTP probe every 10 s with a 2 s timeout, 3 failures down, 1 success up, and a 300 s
// isolation hold held for ever (afterIsolationHold Hold); a 1 s interval with a 1 s timeout and a 0 s hold are accepted as given.
func TestAdmission_GslbHealthCheckDefaults(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	g := &v1alpha1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "health-defaults"}, Spec: v1alpha1.GslbSpec{
		ResourceRef: v1alpha1.ResourceReference{Kind: v1alpha1.ResourceKindService, Name: "web"},
		Hosts:       []string{"app.example.com"}, ZoneRef: v1alpha1.ZoneReference{Name: "gslb"},
		HealthCheck: &v1alpha1.GslbHealthCheck{Port: 8080},
	}}
	if err := c.Create(ctx(t), g); err != nil {
		t.Fatalf("a health check with only a port was refused: %v", err)
	}
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
	if err := c.Create(ctx(t), g2); err != nil {
		t.Fatalf("a health check at its bounds was refused: %v", err)
	}
	if h := g2.Spec.HealthCheck.IsolationHoldSeconds; h == nil || *h != 0 || g2.Spec.HealthCheck.AfterIsolationHold != v1alpha1.AfterIsolationHoldOwnProbes {
		t.Fatalf("isolationHoldSeconds 0 became %v, afterIsolationHold %q", h, g2.Spec.HealthCheck.AfterIsolationHold)
	}

	tcp := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: health-tcp}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  healthCheck: {protocol: TCP, port: 443, insecureSkipVerify: false}`)
	if err := k8s.Create(ctx(t), tcp); err != nil {
		t.Fatalf("a TCP health check was refused: %v", err)
	}
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
	if err := k8s.Create(ctx(t), object(t, b.String())); err != nil {
		t.Fatalf("a DNSRecord at the size bounds was refused: %v", err)
	}
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
	manifest := `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: every-type}
spec:
  endpoints:
  - {dnsName: a.example.com, recordType: A, targets: [192.0.2.1, 192.0.2.2]}
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
  - {dnsName: empty.example.com, recordType: TXT}`
	if err := k8s.Create(ctx(t), object(t, manifest)); err != nil {
		t.Fatalf("well-formed endpoints of every type were refused: %v", err)
	}
}

// TestAdmission_AcceptsWellFormedDS: the DS rule lets through the digest forms in use (SHA-256
// in lower or upper case).
func TestAdmission_AcceptsWellFormedDS(t *testing.T) {
	manifest := `
apiVersion: dnsplane.io/v1alpha1
kind: DNSEndpoint
metadata: {name: good-ds}
spec:
  endpoints:
  - {dnsName: sub.example.com, recordType: DS, targets: ["12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd", "2371 13 2 1F987CC6583E92DF0890718C42A5B3A5B7E7DA8C8D6B8C1E7E0A6A3A9F2D6B1C"]}`
	if err := k8s.Create(ctx(t), object(t, manifest)); err != nil {
		t.Fatalf("a well-formed DS was refused: %v", err)
	}
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
	for i, tc := range []struct{ name, strategy, want string }{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := fmt.Sprintf(`
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: bad-geo-%d}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  strategy: %s`, i, tc.strategy)
			expectInvalid(t, k8s.Create(ctx(t), object(t, manifest)), tc.want)
		})
	}

	// A typical geoRegions map, and a map at its 256-key bound (countries, continents and CIDRs of
	// both families), pass within the CEL cost budget.
	ok := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: geo-example}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  strategy:
    type: geo
    geoRegions: {DE: eu, 'continent:NA': us, '203.0.113.0/24': ap, '2001:db8:ffff:ffff:ffff:ffff:ffff:ff00/120': ap}
    defaultGeoTag: eu`)
	if err := k8s.Create(ctx(t), ok); err != nil {
		t.Fatalf("the issue's geo example was refused: %v", err)
	}
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
	big := object(t, `
apiVersion: dnsplane.io/v1alpha1
kind: Gslb
metadata: {name: geo-largest}
spec:
  resourceRef: {kind: Ingress, name: app}
  zoneRef: {name: gslb}
  strategy: {type: geo, defaultGeoTag: eu}`)
	if err := unstructured.SetNestedMap(big.Object, regions, "spec", "strategy", "geoRegions"); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx(t), big); err != nil {
		t.Fatalf("a geo strategy with 256 regions was refused: %v", err)
	}
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
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(restCfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	z := &v1alpha1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dynupdate-defaults"}, Spec: v1alpha1.DNSZoneSpec{
		Zone: "c1.example.com", ProviderRef: v1alpha1.SecretReference{Name: "creds"},
		DynamicUpdates: []v1alpha1.DynamicUpdate{{KeySecretRef: v1alpha1.SecretReference{Name: "acme-key"}},
			{KeySecretRef: v1alpha1.SecretReference{Name: "other"}, Names: []string{"@", "*.web", "_acme-challenge.*", "a.*.b"}, Types: []v1alpha1.DynamicUpdateType{"A", "AAAA", "TXT"}}},
	}}
	if err := c.Create(ctx(t), z); err != nil {
		t.Fatalf("a DNSZone with dynamicUpdates was refused: %v", err)
	}
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
	cases := []struct{ name, updates, want string }{
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
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := object(t, fmt.Sprintf(`
apiVersion: dnsplane.io/v1alpha1
kind: DNSZone
metadata: {name: bad-dynupdate-%d}
spec:
  zone: c1.example.com
  providerRef: {name: creds}
  dynamicUpdates: %s`, i, tc.updates))
			expectInvalid(t, k8s.Create(ctx(t), o), tc.want)
		})
	}
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
	if err := k8s.Create(ctx(t), object(t, b.String())); err != nil {
		t.Fatalf("a DNSZone with dynamicUpdates at the bounds was refused: %v", err)
	}
}
