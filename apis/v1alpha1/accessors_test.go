package v1alpha1_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/plan"
)

// publishers returns a DNSEndpoint and a DNSRecord with every publishing field set, through the
// promoted fields of the inline blocks.
func publishers() (*v1alpha1.DNSEndpoint, *v1alpha1.DNSRecord) {
	eps := []v1alpha1.Endpoint{{DNSName: "www.example.test", RecordType: "A", RecordTTL: 60, Targets: v1alpha1.Targets{"192.0.2.1"}}}
	ref := &v1alpha1.ZoneReference{Name: "z", Namespace: "other"}
	ep := &v1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "www"}}
	ep.Spec.Endpoints, ep.Spec.ZoneRef, ep.Spec.Strategy, ep.Spec.ApprovedPlan = eps, ref, v1alpha1.StrategyDryRun, "abc"
	ep.Status.ObservedGeneration, ep.Status.Plan, ep.Status.AppliedPlan, ep.Status.Zones = 3, &v1alpha1.Plan{ID: "p"}, "q", []string{"other/z"}
	rec := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "app"}}
	rec.Spec.RootHost = "www.example.test"
	rec.Spec.Endpoints, rec.Spec.ZoneRef, rec.Spec.Strategy, rec.Spec.ApprovedPlan = eps, ref, v1alpha1.StrategyDryRun, "abc"
	rec.Status.ObservedGeneration, rec.Status.OwnerID, rec.Status.Plan, rec.Status.AppliedPlan, rec.Status.Zones = 3, "o", &v1alpha1.Plan{ID: "p"}, "q", []string{"other/z"}
	return ep, rec
}

// TestPublishingBlocks_WireFormatAndPlanIDsUnchanged: the inline PublishingSpec and
// PublishingStatus blocks leave the JSON of both kinds byte for byte as it was with flat fields
// (same keys, same order), so the plan ID, which hashes the spec's JSON, is unchanged too: a
// status.plan.id a user copied into spec.approvedPlan before the refactor still applies. The
// expected values were produced by the flat types of commit b9e817e.
func TestPublishingBlocks_WireFormatAndPlanIDsUnchanged(t *testing.T) {
	ep, rec := publishers()
	cases := []struct {
		name   string
		obj    v1alpha1.Publisher
		json   string
		planID string
	}{
		{"DNSEndpoint", ep,
			`{"metadata":{"name":"www","namespace":"apps"},"spec":{"endpoints":[{"dnsName":"www.example.test","targets":["192.0.2.1"],"recordType":"A","recordTTL":60}],"zoneRef":{"name":"z","namespace":"other"},"strategy":"DryRun","approvedPlan":"abc"},"status":{"observedGeneration":3,"plan":{"id":"p","counts":{"create":0,"update":0,"delete":0}},"appliedPlan":"q","zones":["other/z"]}}`,
			"16cf8db20e526c6817ab"},
		{"DNSRecord", rec,
			`{"metadata":{"name":"app","namespace":"apps"},"spec":{"rootHost":"www.example.test","endpoints":[{"dnsName":"www.example.test","targets":["192.0.2.1"],"recordType":"A","recordTTL":60}],"zoneRef":{"name":"z","namespace":"other"},"strategy":"DryRun","approvedPlan":"abc"},"status":{"observedGeneration":3,"ownerID":"o","plan":{"id":"p","counts":{"create":0,"update":0,"delete":0}},"appliedPlan":"q","zones":["other/z"]}}`,
			"afbbaca69554f60013e8"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.obj)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.json {
				t.Errorf("JSON\n got %s\nwant %s", b, tc.json)
			}
			spec, err := json.Marshal(tc.obj.PlanSpec())
			if err != nil {
				t.Fatal(err)
			}
			if id := plan.ID(nil, spec); id != tc.planID {
				t.Errorf("plan ID %s, want %s", id, tc.planID)
			}
			if got := tc.obj.PublishingSpec().ApprovedPlan; got != "abc" {
				t.Errorf("PlanSpec cleared the object's own approvedPlan: %q", got)
			}
		})
	}
}

// TestPublisher_AccessorsWriteTheObject: the publishing accessors of both kinds read and write
// the object's own spec and status, not copies.
func TestPublisher_AccessorsWriteTheObject(t *testing.T) {
	ep, rec := publishers()
	for name, o := range map[string]v1alpha1.Publisher{"DNSEndpoint": ep, "DNSRecord": rec} {
		t.Run(name, func(t *testing.T) {
			if ps := o.PublishingSpec(); ps.Strategy != v1alpha1.StrategyDryRun || len(ps.Endpoints) != 1 || ps.ZoneRef.Name != "z" {
				t.Errorf("PublishingSpec %+v", ps)
			}
			o.PublishingStatus().AppliedPlan = "r"
			o.SetHeldZones([]string{"apps/a", "apps/b"})
			if got := o.PublishingStatus().AppliedPlan; got != "r" {
				t.Errorf("appliedPlan %q after a write through PublishingStatus", got)
			}
			if got := o.HeldZones(); len(got) != 2 || got[1] != "apps/b" {
				t.Errorf("HeldZones %v", got)
			}
		})
	}
	if ep.Status.AppliedPlan != "r" || len(ep.Status.Zones) != 2 || rec.Status.AppliedPlan != "r" || len(rec.Status.Zones) != 2 {
		t.Errorf("status not written: DNSEndpoint %+v, DNSRecord %+v", ep.Status, rec.Status)
	}
}

// TestConditionsAccessor_AllFourKinds: meta's condition helpers work on every kind through
// GetConditions and SetConditions, and the result lands in status.conditions.
func TestConditionsAccessor_AllFourKinds(t *testing.T) {
	zone, gslb := &v1alpha1.DNSZone{}, &v1alpha1.Gslb{}
	ep, rec := publishers()
	kinds := []struct {
		name   string
		obj    v1alpha1.ConditionsAccessor
		status func() []metav1.Condition
	}{
		{"DNSZone", zone, func() []metav1.Condition { return zone.Status.Conditions }},
		{"DNSEndpoint", ep, func() []metav1.Condition { return ep.Status.Conditions }},
		{"DNSRecord", rec, func() []metav1.Condition { return rec.Status.Conditions }},
		{"Gslb", gslb, func() []metav1.Condition { return gslb.Status.Conditions }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			conds := k.obj.GetConditions()
			meta.SetStatusCondition(&conds, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonReady})
			k.obj.SetConditions(conds)
			if !meta.IsStatusConditionTrue(k.status(), v1alpha1.ConditionReady) {
				t.Errorf("status.conditions %v", k.status())
			}
			if c := meta.FindStatusCondition(k.obj.GetConditions(), v1alpha1.ConditionReady); c == nil || c.Reason != v1alpha1.ReasonReady {
				t.Errorf("GetConditions %v", k.obj.GetConditions())
			}
		})
	}
}

// TestZoneReference_NamespacedName: an empty namespace means the referring object's own
// (docs/api.md, ZoneReference); a set one wins.
func TestZoneReference_NamespacedName(t *testing.T) {
	cases := []struct {
		ref      v1alpha1.ZoneReference
		referrer string
		want     types.NamespacedName
	}{
		{v1alpha1.ZoneReference{Name: "z"}, "apps", types.NamespacedName{Namespace: "apps", Name: "z"}},
		{v1alpha1.ZoneReference{Name: "z", Namespace: "dns"}, "apps", types.NamespacedName{Namespace: "dns", Name: "z"}},
		{v1alpha1.ZoneReference{Name: "z", Namespace: "apps"}, "apps", types.NamespacedName{Namespace: "apps", Name: "z"}},
		{v1alpha1.ZoneReference{Name: "z"}, "", types.NamespacedName{Name: "z"}},
	}
	for _, tc := range cases {
		if got := tc.ref.NamespacedName(tc.referrer); got != tc.want {
			t.Errorf("%+v from %q: %v, want %v", tc.ref, tc.referrer, got, tc.want)
		}
		if got := tc.ref.NamespacedName(tc.referrer).String(); got != tc.want.Namespace+"/"+tc.want.Name {
			t.Errorf("%+v from %q: key %q", tc.ref, tc.referrer, got)
		}
	}
}
