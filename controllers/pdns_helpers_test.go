package controllers_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// pdnsNamespace is the PowerDNS set-up of the envtest stories: a real PowerDNS on loopback
// (pdnstest.Start, stopped when the test ends), and namespace ns with its Secret "dns" for it
// (pdnsSecret, with the extra keys kv). It returns the server.
func pdnsNamespace(t *testing.T, ns string, kv ...string) pdnstest.Server {
	t.Helper()
	srv := pdnstest.Start(t)
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, pdnsSecret(ns, srv, kv...))
	return srv
}

// pdnsSecret is a dnsplane.io/pdns Secret named "dns" for srv, with extra keys.
func pdnsSecret(ns string, srv pdnstest.Server, kv ...string) *corev1.Secret {
	data := map[string]string{"PDNS_API_URL": srv.APIURL, "PDNS_API_KEY": srv.Key, "DNS_ADDRESS": srv.DNSAddr}
	for i := 0; i+1 < len(kv); i += 2 {
		data[kv[i]] = kv[i+1]
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: "dnsplane.io/pdns", StringData: data}
}

// pdnsSets reads a PowerDNS zone's record sets through the API, keyed "name/type" -> sorted
// targets.
func pdnsSets(t *testing.T, srv pdnstest.Server, zone string) map[string][]string {
	t.Helper()
	p, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := p.ListRecordSets(ctxT(t), pdns.ZoneID(zone))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, rs := range sets {
		out[rs.Key().String()] = slices.Sorted(slices.Values(rs.Targets))
	}
	return out
}
