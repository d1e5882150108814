package factory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestResolve_RejectedCredentialsNameTheSecretAndKey: a real PowerDNS that
// rejects the API key gives an error that names the Secret (namespace/name) and the key to fix,
// PDNS_API_KEY, and never the key's value; it still wraps ErrInvalidCredentials. The Secret is
// read through controller-runtime's in-memory client.
func TestResolve_RejectedCredentialsNameTheSecretAndKey(t *testing.T) {
	srv := pdnstest.Start(t)
	const wrong = "not-the-key-6f1d2c"
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pdns"}, Type: TypePDNS,
		Data: map[string][]byte{"PDNS_API_URL": []byte(srv.APIURL), "PDNS_API_KEY": []byte(wrong)}}
	f := &Factory{Client: fake.NewClientBuilder().WithScheme(s).WithObjects(sec).Build()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := f.Resolve(ctx, "team", "pdns")
	if err != nil {
		t.Fatal(err)
	}
	_, err = res.Provider.EnsureZone(ctx, provider.ZoneSpec{Name: "creds.test", CallerReference: "x"})
	if !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Fatalf("EnsureZone with a wrong key: %v, want ErrInvalidCredentials", err)
	}
	msg := err.Error()
	for _, want := range []string{"secret team/pdns", "PDNS_API_KEY", "401"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if strings.Contains(msg, wrong) {
		t.Fatalf("error shows the key's value: %q", msg)
	}
}

// TestCredentialHint_NamesOnlyTheKeysSet: per Secret type, the keys a user fixes, those set
// only, never a value; with none set, the ambient credentials are named.
func TestCredentialHint_NamesOnlyTheKeysSet(t *testing.T) {
	cases := []struct {
		typ  corev1.SecretType
		data map[string]string
		want string
	}{
		{TypePDNS, map[string]string{"PDNS_API_URL": "http://x", "PDNS_API_KEY": "v1"}, "secret ns/s (key PDNS_API_KEY)"},
		{TypeRFC2136, map[string]string{"RFC2136_TSIG_KEYNAME": "v1", "RFC2136_TSIG_SECRET": "v2"}, "(keys RFC2136_TSIG_KEYNAME, RFC2136_TSIG_SECRET)"},
		{TypeAWS, map[string]string{"AWS_ACCESS_KEY_ID": "v1", "AWS_SECRET_ACCESS_KEY": "v2"}, "(keys AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"},
		{TypeAWS, map[string]string{"AWS_REGION": "eu-west-1"}, "secret ns/s sets no credential key; the manager's ambient credentials were rejected"},
		{TypeGoogle, map[string]string{"GOOGLE_PROJECT_ID": "p", "GOOGLE_APPLICATION_CREDENTIALS_JSON": "v1"}, "(key GOOGLE_APPLICATION_CREDENTIALS_JSON)"},
		{TypeAzure, map[string]string{"AZURE_TENANT_ID": "v1", "AZURE_CLIENT_ID": "v2", "AZURE_CLIENT_SECRET": "v3"}, "(keys AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET)"},
		{TypeWebhook, map[string]string{KeyWebhookURL: "http://x", KeyWebhookHeaders: "Authorization: v1"}, "(key WEBHOOK_HEADERS)"},
	}
	for _, c := range cases {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: c.typ, StringData: nil, Data: map[string][]byte{}}
		for k, v := range c.data {
			s.Data[k] = []byte(v)
		}
		got := credentialHint(s)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %v: %q, want it to contain %q", c.typ, c.data, got, c.want)
		}
		for _, v := range []string{"v1", "v2", "v3"} {
			if strings.Contains(got, v) {
				t.Errorf("%s: hint shows a value: %q", c.typ, got)
			}
		}
	}
}
