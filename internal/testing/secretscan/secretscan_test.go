package secretscan

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func secret(typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// forms returns "key/form" of each needle, in order.
func forms(ns []Needle) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Key+"/"+n.Form)
	}
	return strings.Join(out, " ")
}

func TestNeedles(t *testing.T) {
	pem := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
	google := `{"type":"service_account","client_email":"dns@p.iam.gserviceaccount.com","private_key_id":"0123456789abcdef","private_key":"` + strings.ReplaceAll(pem, "\n", `\n`) + `"}`
	cases := []struct {
		name  string
		s     *corev1.Secret
		forms string
	}{
		{"pdns: the API key only, not the URL", secret("dnsplane.io/pdns", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "key-0123456789"}),
			"PDNS_API_KEY/base64 PDNS_API_KEY/raw"},
		{"rfc2136: the TSIG secret, not its key name", secret("dnsplane.io/rfc2136", map[string]string{"RFC2136_TSIG_KEYNAME": "dnsplane-key", "RFC2136_TSIG_SECRET": "c2VjcmV0LXRzaWctdmFsdWU="}),
			"RFC2136_TSIG_SECRET/base64 RFC2136_TSIG_SECRET/raw"},
		{"aws: the secret access key, not its ID", secret("dnsplane.io/aws", map[string]string{"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE0000", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG"}),
			"AWS_SECRET_ACCESS_KEY/base64 AWS_SECRET_ACCESS_KEY/raw"},
		{"azure: the client secret, not the tenant", secret("dnsplane.io/azure", map[string]string{"AZURE_TENANT_ID": "tenant-0000-1111", "AZURE_CLIENT_SECRET": "azure-client-secret"}),
			"AZURE_CLIENT_SECRET/base64 AZURE_CLIENT_SECRET/raw"},
		{"google: the JSON, its private key as text and JSON-escaped, its key ID", secret("dnsplane.io/google", map[string]string{"GOOGLE_APPLICATION_CREDENTIALS_JSON": google}),
			"GOOGLE_APPLICATION_CREDENTIALS_JSON/base64 GOOGLE_APPLICATION_CREDENTIALS_JSON/json GOOGLE_APPLICATION_CREDENTIALS_JSON/json:private_key GOOGLE_APPLICATION_CREDENTIALS_JSON/json:private_key GOOGLE_APPLICATION_CREDENTIALS_JSON/json:private_key_id GOOGLE_APPLICATION_CREDENTIALS_JSON/raw"},
		{"webhook: the headers, each value too, not the URL", secret("dnsplane.io/webhook", map[string]string{"WEBHOOK_URL": "http://127.0.0.1:8888",
			"WEBHOOK_HEADERS": "Authorization: Bearer tok-0123456789\nX-Short: 1234"}),
			"WEBHOOK_HEADERS/base64 WEBHOOK_HEADERS/header:Authorization WEBHOOK_HEADERS/json WEBHOOK_HEADERS/raw"},
		{"local: nothing", secret("dnsplane.io/local", nil), ""},
		{"an unknown dnsplane.io type: nothing", secret("dnsplane.io/other", map[string]string{"X": "0123456789"}), ""},
		{"tls: the key, not the certificate", secret(corev1.SecretTypeTLS, map[string]string{"tls.crt": "certificate-bytes", "tls.key": "private-key-bytes"}),
			"tls.key/base64 tls.key/raw"},
		{"opaque: every value of 8 bytes or more", secret(corev1.SecretTypeOpaque, map[string]string{"a": "short", "b": "long-enough"}),
			"b/base64 b/raw"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := forms(Needles(c.s)); got != c.forms {
				t.Fatalf("needles %q, want %q", got, c.forms)
			}
		})
	}
	t.Run("stringData counts as data", func(t *testing.T) {
		s := &corev1.Secret{Type: "dnsplane.io/pdns", StringData: map[string]string{"PDNS_API_KEY": "from-string-data"}}
		if got := Needles(s); len(got) != 2 || got[1].Value != "from-string-data" {
			t.Fatalf("needles %+v", got)
		}
	})
}

func TestScanner_FindsEveryFormOncePerPlace(t *testing.T) {
	s := New()
	s.AddSecret(secret("dnsplane.io/pdns", map[string]string{"PDNS_API_KEY": "key-0123456789"}))
	s.Check("log", "no secret here")
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Check("log", `{"msg":"calling with key-0123456789"}`)
	s.Check("log", `{"msg":"again key-0123456789"}`)
	s.Check("Event ns/e", "dump: "+base64.StdEncoding.EncodeToString([]byte("key-0123456789")))
	hits := s.Hits()
	if len(hits) != 2 || hits[0].Where != "log" || hits[1].Where != "Event ns/e" || hits[1].Needle.Form != "base64" {
		t.Fatalf("hits %+v", hits)
	}
	err := s.Err()
	if err == nil || strings.Contains(err.Error(), "key-0123456789") || !strings.Contains(err.Error(), "<PDNS_API_KEY>") ||
		!strings.Contains(err.Error(), "Secret ns/s") {
		t.Fatalf("Err %v: want the key and Secret named and the value masked", err)
	}
}

func TestScanner_LateSecretChecksRecentLogs(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New()
	s.now = func() time.Time { return now }
	_, _ = s.Write([]byte("old line holds old-secret-value\n"))
	now = now.Add(ringSpan + time.Second)
	_, _ = s.Write([]byte("new line holds new-secret-value\n"))
	s.AddSecret(secret(corev1.SecretTypeOpaque, map[string]string{"old": "old-secret-value", "new": "new-secret-value"}))
	hits := s.Hits()
	if len(hits) != 1 || hits[0].Needle.Key != "new" {
		t.Fatalf("hits %+v: want the line still kept (within %s), not the older one", hits, ringSpan)
	}
}

func TestScanner_Forgive(t *testing.T) {
	s := New()
	s.AddSecret(secret(corev1.SecretTypeOpaque, map[string]string{"canary": "canary-value-123", "real": "real-value-456"}))
	s.Check("log", "canary-value-123 and "+base64.StdEncoding.EncodeToString([]byte("canary-value-123")))
	s.Forgive("canary-value-123")
	if err := s.Err(); err != nil {
		t.Fatalf("a forgiven value, in every form, is no hit: %v", err)
	}
	s.Check("log", "real-value-456")
	if len(s.Hits()) != 1 {
		t.Fatalf("hits %+v", s.Hits())
	}
}

func TestScanner_EventStatusMetrics(t *testing.T) {
	const v = "value-of-a-secret"
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = dnsv1.AddToScheme(scheme)
	s := New()
	s.AddSecret(secret(corev1.SecretTypeOpaque, map[string]string{"k": v}))

	s.CheckEvent(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e1"}, Reason: "Fine", Message: "nothing"})
	s.CheckEvent(&corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e2"}, Reason: "Leak", Message: "key " + v})
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z"}, Spec: dnsv1.DNSZoneSpec{Zone: v}}
	s.CheckStatus(scheme, z) // in the spec only: not a status hit
	z.Status.Conditions = []metav1.Condition{{Type: "Ready", Message: "rejected " + v}}
	s.CheckStatus(scheme, z)
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "leaky", Help: "h"}, []string{"l"})
	reg.MustRegister(g)
	g.WithLabelValues(v).Set(1)
	if err := s.CheckMetrics(reg); err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, h := range s.Hits() {
		where = append(where, h.Where)
	}
	want := "Event ns/e2 (Leak on  ), status of DNSZone ns/z, metrics"
	if got := strings.Join(where, ", "); got != want {
		t.Fatalf("hits in %q, want %q", got, want)
	}
}
