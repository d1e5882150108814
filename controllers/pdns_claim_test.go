package controllers_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
)

// TestPowerDNS_AClaimMetAtTheFirstWriteIsReportedAtOnce: external-dns claims
// a name in a PowerDNS zone (its registry TXT and its set, in one PATCH) after the zone's writer
// read the zone, and a DNSEndpoint then wants the name: its plan, made against that read, creates
// the set. PowerDNS has no conditional write; the provider reads the created names before its
// PATCH, so the write fails with a conflict and writes nothing: external-dns' set keeps its
// value, no registry record of dnsplane's lands, and the immediate retry, against a fresh read,
// reports the name as held by that external-dns owner (OwnershipConflict), instead of Published
// over an overwritten set until the next zone re-read found a DoubleClaim. The Secret sets
// PDNS_CLAIM_READ_MAX_AGE=0s, so that the check is a GET just before the write: with the
// default (1s) it is the zone's last read when that is younger, and a set created within that
// second is overwritten (TestRealServer_ACreateIsCheckedAgainstARecentRead shows that window).
func TestPowerDNS_AClaimMetAtTheFirstWriteIsReportedAtOnce(t *testing.T) {
	ns := "pdns-claim"
	srv := pdnsNamespace(t, ns, "PDNS_CLAIM_READ_MAX_AGE", "0s")
	const zone = "claim.pdns.test"
	z := zoneObj(ns, "z", zone, nil)
	first := endpointObj(ns, "first", dnsv1.Endpoint{DNSName: "first." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	create(t, z, first)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, first, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished) // the writer's view is loaded

	ext, err := pdns.New(pdns.Config{APIURL: srv.APIURL, APIKey: srv.Key})
	if err != nil {
		t.Fatal(err)
	}
	txt := dnsprovider.RecordSet{Name: "a-www." + zone, Type: "TXT", TTL: 300,
		Targets: []string{"heritage=external-dns,external-dns/owner=ext-prod,external-dns/resource=service/default/www"}}
	set := dnsprovider.RecordSet{Name: "www." + zone, Type: "A", TTL: 300, Targets: []string{"198.51.100.7"}}
	if err := ext.ApplyChanges(ctxT(t), pdns.ZoneID(zone), []dnsprovider.Change{
		{Action: dnsprovider.ActionCreate, After: &txt}, {Action: dnsprovider.ActionCreate, After: &set}}); err != nil {
		t.Fatalf("external-dns' write: %v", err)
	}

	www := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: "www." + zone, RecordType: "A", Targets: dnsv1.Targets{"192.0.2.80"}})
	create(t, www)
	c := waitCondition(t, www, dnsv1.ConditionReady, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict)
	if !strings.Contains(c.Message, "external-dns owner ext-prod") {
		t.Errorf("Ready message %q does not name external-dns owner ext-prod", c.Message)
	}
	sets := pdnsSets(t, srv, zone)
	if got := sets[set.Key().String()]; !slices.Equal(got, set.Targets) {
		t.Errorf("external-dns' set %s = %v, want %v kept", set.Key(), got, set.Targets)
	}
	for k := range sets {
		if name, _, _ := strings.Cut(k, "/"); dnsprovider.IsRegistryName(name) && strings.Contains(name, "www") {
			t.Errorf("a registry record of dnsplane's for the refused name landed: %s", k)
		}
	}
	if got := sets[fmt.Sprintf("first.%s/A", zone)]; !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("first.%s = %v, want [192.0.2.1]", zone, got)
	}
}
