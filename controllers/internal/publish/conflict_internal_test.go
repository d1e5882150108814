package publish

import (
	"testing"
	"time"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

func plansWith(reasons ...string) []ZonePlan {
	var res plan.Result
	for i, r := range reasons {
		res.Conflicts = append(res.Conflicts, plan.Conflict{Key: provider.RecordSetKey{Name: string(rune('a'+i)) + ".example.test", Type: "A"}, Reason: r, Message: r})
	}
	return []ZonePlan{{Result: res}}
}

// TestRequeueAfter_RetriesConflictsThatMayEndElsewhere: names held by another owner (whose
// holder may go in another cluster) are retried every ConflictRetry; a NotCapable endpoint alone
// is terminal and waits for the resync like a clean object.
func TestRequeueAfter_RetriesConflictsThatMayEndElsewhere(t *testing.T) {
	opts := Options{Resync: 2 * time.Hour, ConflictRetry: 30 * time.Second}
	for _, tc := range []struct {
		name  string
		plans []ZonePlan
		opts  Options
		want  time.Duration
	}{
		{"clean", plansWith(), opts, 2 * time.Hour},
		{"held by another owner", plansWith(plan.ReasonOwnershipConflict), opts, 30 * time.Second},
		{"double claim", plansWith(plan.ReasonDoubleClaim), opts, 30 * time.Second},
		{"not capable alone", plansWith(plan.ReasonNotCapable), opts, 2 * time.Hour},
		{"not capable beside a conflict", plansWith(plan.ReasonNotCapable, plan.ReasonOwnershipConflict), opts, 30 * time.Second},
		{"invalid endpoint alone", plansWith(plan.ReasonInvalidEndpoint), opts, 2 * time.Hour},
		{"no conflict retry", plansWith(plan.ReasonOwnershipConflict), Options{Resync: time.Hour}, time.Hour},
		{"resync sooner than the retry", plansWith(plan.ReasonOwnershipConflict), Options{Resync: 10 * time.Second, ConflictRetry: time.Minute}, 10 * time.Second},
		{"no resync", plansWith(plan.ReasonOwnershipConflict), Options{ConflictRetry: time.Minute}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := requeueAfter(tc.plans, tc.opts); got != tc.want {
				t.Errorf("requeueAfter = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSummarise_ReadyReasonIsTheOneToActOnFirst: DoubleClaim, then NotCapable, then
// OwnershipConflict, whatever the order of the conflicts.
func TestSummarise_ReadyReasonIsTheOneToActOnFirst(t *testing.T) {
	for _, tc := range []struct {
		reasons []string
		want    string
	}{
		{[]string{plan.ReasonOwnershipConflict}, dnsv1.ReasonOwnershipConflict},
		{[]string{plan.ReasonNotCapable, plan.ReasonOwnershipConflict}, dnsv1.ReasonNotCapable},
		{[]string{plan.ReasonOwnershipConflict, plan.ReasonNotCapable}, dnsv1.ReasonNotCapable},
		{[]string{plan.ReasonNotCapable, plan.ReasonDoubleClaim, plan.ReasonOwnershipConflict}, dnsv1.ReasonDoubleClaim},
	} {
		if _, _, _, got := summarise(plansWith(tc.reasons...)); got != tc.want {
			t.Errorf("summarise(%v) reason = %s, want %s", tc.reasons, got, tc.want)
		}
	}
}
