package dnsrecord_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/dnsrecord"
	"github.com/dnsplane/dnsplane/pkg/heartbeat"
)

var t0 = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

func owner(id string, last time.Time, healthy bool) heartbeat.Owner {
	return heartbeat.Owner{OwnerID: id, Resource: "DNSRecord/apps/app", LastHeartbeat: last, Healthy: healthy}
}

func healthy(rec *dnsv1.DNSRecord) *metav1.Condition {
	return meta.FindStatusCondition(rec.Status.Conditions, dnsv1.ConditionHealthy)
}

func TestSetOwners(t *testing.T) {
	const threshold = 10 * time.Second
	rec := &dnsv1.DNSRecord{}
	rec.Generation = 1

	dnsrecord.SetOwners(rec, nil, t0, threshold)
	if c := healthy(rec); c == nil || c.Status != metav1.ConditionUnknown {
		t.Fatalf("no owners: %+v, want Unknown", c)
	}

	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", t0, true), owner("cluster-b", t0, true)}, t0, threshold)
	if c := healthy(rec); c.Status != metav1.ConditionTrue || c.Reason != dnsv1.ReasonAllOwnersHealthy || len(rec.Status.Owners) != 2 {
		t.Fatalf("all healthy: %+v, owners %+v", c, rec.Status.Owners)
	}

	// A newer heartbeat within half the threshold does not rewrite status.owners.
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", t0.Add(4*time.Second), true), owner("cluster-b", t0.Add(4*time.Second), true)}, t0.Add(4*time.Second), threshold)
	if !rec.Status.Owners[0].LastHeartbeat.Time.Equal(t0) {
		t.Fatalf("owners rewritten for a 4 s newer heartbeat: %v", rec.Status.Owners[0].LastHeartbeat)
	}
	// Past half the threshold it does.
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", t0.Add(6*time.Second), true), owner("cluster-b", t0.Add(6*time.Second), true)}, t0.Add(6*time.Second), threshold)
	if !rec.Status.Owners[0].LastHeartbeat.Time.Equal(t0.Add(6 * time.Second)) {
		t.Fatalf("owners not refreshed after 6 s: %v", rec.Status.Owners[0].LastHeartbeat)
	}

	// b fails: named in the message, with its last heartbeat.
	now := t0.Add(20 * time.Second)
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", now, true), owner("cluster-b", t0.Add(6*time.Second), false)}, now, threshold)
	c := healthy(rec)
	if c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonHeartbeatFailing || !strings.Contains(c.Message, "cluster-b") || strings.Contains(c.Message, "cluster-a") {
		t.Fatalf("failing: %+v", c)
	}
	msg := c.Message
	// Later checks with the same failing owner keep the message (no status write per tick).
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", now, true), owner("cluster-b", t0.Add(6*time.Second), false)}, now.Add(2*time.Second), threshold)
	if healthy(rec).Message != msg {
		t.Fatalf("message rewritten: %q -> %q", msg, healthy(rec).Message)
	}
	// A contributor that never heartbeat is named with "never".
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", now, true), owner("cluster-c", time.Time{}, false)}, now, threshold)
	if c := healthy(rec); !strings.Contains(c.Message, "cluster-c") || !strings.Contains(c.Message, "never") {
		t.Fatalf("never: %+v", c)
	}
	// Recovery.
	dnsrecord.SetOwners(rec, []heartbeat.Owner{owner("cluster-a", now, true)}, now, threshold)
	if c := healthy(rec); c.Status != metav1.ConditionTrue || c.Reason != dnsv1.ReasonAllOwnersHealthy {
		t.Fatalf("recovered: %+v", c)
	}
}
