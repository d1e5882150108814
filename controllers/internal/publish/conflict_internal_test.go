package publish

import (
	"fmt"
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
		if got := summarise(plansWith(tc.reasons...)).conflictReason; got != tc.want {
			t.Errorf("summarise(%v) reason = %s, want %s", tc.reasons, got, tc.want)
		}
	}
}

// TestFailed_ReasonsOfProviderErrors: a write the provider refuses as beyond its capabilities
// (a geo CIDR region on Route 53 or Cloud DNS) is NotCapable on Ready, with the provider's
// message, and is not a reconcile error; a missing zone is ZoneNotFound; a conflict is retried
// at once without touching Ready; anything else is ProviderError and goes back to the rate
// limiter.
func TestFailed_ReasonsOfProviderErrors(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		reason     string // "" = Ready untouched
		returnsErr bool
	}{
		{"not capable", fmt.Errorf("apply: %w: region 203.0.113.0/24: CIDR", provider.ErrNotCapable), dnsv1.ReasonNotCapable, false},
		{"zone gone", fmt.Errorf("apply: %w", provider.ErrZoneNotFound), dnsv1.ReasonZoneNotFound, false},
		{"conflict", fmt.Errorf("apply: %w", provider.ErrConflict), "", false},
		{"invalid change", fmt.Errorf("apply: %w", provider.ErrInvalidChange), dnsv1.ReasonProviderError, true},
	} {
		reason, msg := "", ""
		_, err := failed(func(_ bool, r, m string) { reason, msg = r, m }, tc.err)
		if reason != tc.reason || (err != nil) != tc.returnsErr {
			t.Errorf("%s: Ready reason %q, error %v; want %q, error %v", tc.name, reason, err, tc.reason, tc.returnsErr)
		}
		if tc.reason != "" && msg != tc.err.Error() {
			t.Errorf("%s: message %q, want the error's", tc.name, msg)
		}
	}
}
