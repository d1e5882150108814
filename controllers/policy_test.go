package controllers_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
)

// answersA returns the A targets the embedded server answers for name, as a string.
func answersA(t *testing.T, name string) string {
	t.Helper()
	var out []string
	for _, rr := range dnstest.Ask(t, dnsAddr, name, dns.TypeA).Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	return strings.Join(out, ",")
}

// TestDNSEndpoint_PolicyUpsertOnlyNeverDeletes: under spec.policy UpsertOnly
// an endpoint removed from the spec keeps its record (Ready names the withheld delete), a
// changed target is updated, and deleting the object leaves its records, named in a Warning
// Event RecordsKept. Switching the policy to Sync before deleting removes them.
func TestDNSEndpoint_PolicyUpsertOnlyNeverDeletes(t *testing.T) {
	ns := namespace(t, "policy-upsert")
	create(t, zoneObj(ns, "z", "upsert.test", nil))
	ep := endpointObj(ns, "app",
		dnsv1.Endpoint{DNSName: "a.upsert.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}},
		dnsv1.Endpoint{DNSName: "b.upsert.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.2"}})
	ep.Spec.Policy = dnsv1.PolicyUpsertOnly
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	update(t, ep, func() {
		ep.Spec.Endpoints = []dnsv1.Endpoint{{DNSName: "a.upsert.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.9"}}}
	})
	eventually(t, 30*time.Second, "a updated, b kept, the withheld delete named", func() error {
		c, err := condition(t, ep, dnsv1.ConditionReady)
		if err != nil {
			return err
		}
		if c.ObservedGeneration != ep.Generation || c.Reason != dnsv1.ReasonPublished || !strings.Contains(c.Message, "policy upsert-only withheld 1 changes: Delete b.upsert.test/A") {
			return fmt.Errorf("Ready %s (gen %d): %s", c.Reason, c.ObservedGeneration, c.Message)
		}
		if a, b := answersA(t, "a.upsert.test"), answersA(t, "b.upsert.test"); a != "192.0.2.9" || b != "192.0.2.2" {
			return fmt.Errorf("a = %q, b = %q", a, b)
		}
		return nil
	})

	if err := k8s.Delete(ctxT(t), ep); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ep)
	// No finalizer: the release follows the deletion, and its Event says it is done.
	eventually(t, 10*time.Second, "RecordsKept Event", func() error {
		msg, err := warningFor(t, ns, "DNSEndpoint", "app", dnsv1.ReasonRecordsKept)
		if err == nil && !strings.Contains(msg, "policy upsert-only never deletes") {
			return fmt.Errorf("message %q", msg)
		}
		return err
	})
	if a, b := answersA(t, "a.upsert.test"), answersA(t, "b.upsert.test"); a != "192.0.2.9" || b != "192.0.2.2" {
		t.Fatalf("deleting an UpsertOnly object removed records: a = %q, b = %q", a, b)
	}

	// A new object of the same name holds the records again (its registry records stayed); under
	// Sync it removes what it no longer wants, and its deletion removes the rest.
	again := endpointObj(ns, "app", dnsv1.Endpoint{DNSName: "a.upsert.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.9"}})
	again.Spec.Policy = dnsv1.PolicySync
	create(t, again)
	waitCondition(t, again, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	if b := answersA(t, "b.upsert.test"); b != "" {
		t.Fatalf("b.upsert.test still answered under Sync: %q", b)
	}
	if err := k8s.Delete(ctxT(t), again); err != nil {
		t.Fatal(err)
	}
	waitGone(t, again)
	eventually(t, 30*time.Second, "a.upsert.test removed by the Sync delete", func() error {
		if a := answersA(t, "a.upsert.test"); a != "" {
			return fmt.Errorf("a.upsert.test still answered: %q", a)
		}
		return nil
	})
}

// TestDNSEndpoint_PolicyCreateOnlyNeverUpdates: under CreateOnly a changed
// target is not written (Ready names the withheld update), a new endpoint is created.
func TestDNSEndpoint_PolicyCreateOnlyNeverUpdates(t *testing.T) {
	ns := namespace(t, "policy-create")
	create(t, zoneObj(ns, "z", "createonly.test", nil))
	ep := endpointObj(ns, "app", dnsv1.Endpoint{DNSName: "a.createonly.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	ep.Spec.Policy = dnsv1.PolicyCreateOnly
	create(t, ep)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)
	update(t, ep, func() {
		ep.Spec.Endpoints = []dnsv1.Endpoint{
			{DNSName: "a.createonly.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.9"}},
			{DNSName: "c.createonly.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.3"}},
		}
	})
	eventually(t, 30*time.Second, "c created, a not updated", func() error {
		c, err := condition(t, ep, dnsv1.ConditionReady)
		if err != nil {
			return err
		}
		if c.ObservedGeneration != ep.Generation || !strings.Contains(c.Message, "policy create-only withheld 1 changes: Update a.createonly.test/A") {
			return fmt.Errorf("Ready %s (gen %d): %s", c.Reason, c.ObservedGeneration, c.Message)
		}
		if a, cc := answersA(t, "a.createonly.test"), answersA(t, "c.createonly.test"); a != "192.0.2.1" || cc != "192.0.2.3" {
			return fmt.Errorf("a = %q, c = %q", a, cc)
		}
		return nil
	})
}
