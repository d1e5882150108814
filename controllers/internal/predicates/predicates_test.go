package predicates_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
)

func zone(mut func(*dnsv1.DNSZone)) *dnsv1.DNSZone {
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z"}}
	z.Status.ZoneID = "id-1"
	z.Status.Conditions = []metav1.Condition{{Type: dnsv1.ConditionZoneAvailable, Status: metav1.ConditionTrue, Reason: "Available"}}
	if mut != nil {
		mut(z)
	}
	return z
}

func TestDeletionStarted_PassesOnlyTheUpdateThatSetsTheTimestamp(t *testing.T) {
	now := metav1.Now()
	live, deleting := zone(nil), zone(func(z *dnsv1.DNSZone) { z.DeletionTimestamp = &now })
	for _, tc := range []struct {
		name     string
		old, new *dnsv1.DNSZone
		want     bool
	}{
		{"deletion starts", live, deleting, true},
		{"status write of a live object", live, live, false},
		{"status write while deleting", deleting, deleting, false},
	} {
		if got := (predicates.DeletionStarted{}).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: Update = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !(predicates.DeletionStarted{}).Create(event.CreateEvent{Object: live}) {
		t.Error("Create is filtered; want passed")
	}
}

func TestZoneUsabilityChanged_PassesWhatPublishersSee(t *testing.T) {
	now := metav1.Now()
	base := zone(nil)
	for _, tc := range []struct {
		name string
		new  *dnsv1.DNSZone
		want bool
	}{
		{"nothing changed", zone(nil), false},
		{"sync time only", zone(func(z *dnsv1.DNSZone) { z.Status.LastSyncTimestamp = &now }), false},
		{"other condition", zone(func(z *dnsv1.DNSZone) {
			z.Status.Conditions = append(z.Status.Conditions, metav1.Condition{Type: "ParentLinkCreated", Status: metav1.ConditionFalse, Reason: "X"})
		}), false},
		{"zone ID", zone(func(z *dnsv1.DNSZone) { z.Status.ZoneID = "id-2" }), true},
		{"availability", zone(func(z *dnsv1.DNSZone) { z.Status.Conditions[0].Status = metav1.ConditionFalse }), true},
		{"deletion", zone(func(z *dnsv1.DNSZone) { z.DeletionTimestamp = &now }), true},
		{"delegation", zone(func(z *dnsv1.DNSZone) { z.Spec.Delegation = &dnsv1.Delegation{} }), true},
	} {
		if got := (predicates.ZoneUsabilityChanged{}).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: Update = %v, want %v", tc.name, got, tc.want)
		}
	}
	unjudged := zone(func(z *dnsv1.DNSZone) { z.Status.Conditions = nil })
	judgedFalse := zone(func(z *dnsv1.DNSZone) { z.Status.Conditions[0].Status = metav1.ConditionFalse })
	if !(predicates.ZoneUsabilityChanged{}).Update(event.UpdateEvent{ObjectOld: unjudged, ObjectNew: judgedFalse}) {
		t.Error("a zone's first ZoneAvailable=False filtered; want passed (deferred publishers wait for it)")
	}
	unavailable := zone(func(z *dnsv1.DNSZone) { z.Status.Conditions = nil })
	if (predicates.ZoneUsabilityChanged{}).Create(event.CreateEvent{Object: unavailable}) {
		t.Error("Create of an unavailable zone passed; want filtered")
	}
	if !(predicates.ZoneUsabilityChanged{}).Create(event.CreateEvent{Object: base}) {
		t.Error("Create of an available zone filtered; want passed")
	}
}

func TestSpecOrDeletion_PassesSpecChangesAndDeletionOnly(t *testing.T) {
	now := metav1.Now()
	gen := func(g int64, mut func(*dnsv1.DNSZone)) *dnsv1.DNSZone {
		return zone(func(z *dnsv1.DNSZone) {
			z.Generation = g
			if mut != nil {
				mut(z)
			}
		})
	}
	p := predicates.SpecOrDeletion()
	for _, tc := range []struct {
		name     string
		old, new *dnsv1.DNSZone
		want     bool
	}{
		{"spec change", gen(1, nil), gen(2, nil), true},
		{"status write", gen(1, nil), gen(1, func(z *dnsv1.DNSZone) { z.Status.ZoneID = "id-2" }), false},
		{"finalizer added", gen(1, nil), gen(1, func(z *dnsv1.DNSZone) { z.Finalizers = []string{"dnsplane.io/zone"} }), false},
		{"deletion starts", gen(1, nil), gen(1, func(z *dnsv1.DNSZone) { z.DeletionTimestamp = &now }), true},
		{"status write while deleting", gen(1, func(z *dnsv1.DNSZone) { z.DeletionTimestamp = &now }), gen(1, func(z *dnsv1.DNSZone) { z.DeletionTimestamp = &now; z.Status.ZoneID = "x" }), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: Update = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: gen(1, nil)}) || !p.Delete(event.DeleteEvent{Object: gen(1, nil)}) || !p.Generic(event.GenericEvent{Object: gen(1, nil)}) {
		t.Error("a Create, Delete or Generic event is filtered; want each passed")
	}
}

func TestUpdateOnly_PassesOnlyTheUpdatesItsTestAccepts(t *testing.T) {
	labelled := func(o, n client.Object) bool { return n.GetLabels()["x"] != o.GetLabels()["x"] }
	p := predicates.UpdateOnly(labelled)
	plain, marked := zone(nil), zone(func(z *dnsv1.DNSZone) { z.Labels = map[string]string{"x": "1"} })
	if !p.Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: marked}) {
		t.Error("an update the test accepts is filtered; want passed")
	}
	if p.Update(event.UpdateEvent{ObjectOld: marked, ObjectNew: marked}) {
		t.Error("an update the test refuses passes; want filtered")
	}
	if p.Create(event.CreateEvent{Object: marked}) || p.Delete(event.DeleteEvent{Object: marked}) || p.Generic(event.GenericEvent{Object: marked}) {
		t.Error("a create, delete or generic event passes; want every one filtered")
	}
}
