package status

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestEventOnChange_QuietFirstSuccess: a reason in quiet silences only the condition's first
// appearance as True (an object's routine first publish); a recovery from False, a first
// failure, a first wait and a reason not in quiet still emit one Event each.
func TestEventOnChange_QuietFirstSuccess(t *testing.T) {
	c := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: dnsv1.ConditionReady, Status: s, Reason: reason}}
	}
	quiet := []string{dnsv1.ReasonPublished}
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition
		want          int
	}{
		{"first publish", nil, c(metav1.ConditionTrue, dnsv1.ReasonPublished), 0},
		{"recovery", c(metav1.ConditionFalse, dnsv1.ReasonProviderError), c(metav1.ConditionTrue, dnsv1.ReasonPublished), 1},
		{"first failure", nil, c(metav1.ConditionFalse, dnsv1.ReasonProviderError), 1},
		{"first wait", nil, c(metav1.ConditionFalse, dnsv1.ReasonAwaitingZone), 1},
		{"first True of a reason not quiet", nil, c(metav1.ConditionTrue, dnsv1.ReasonReady), 1},
		{"unchanged", c(metav1.ConditionTrue, dnsv1.ReasonPublished), c(metav1.ConditionTrue, dnsv1.ReasonPublished), 0},
	} {
		rec := record.NewFakeRecorder(10)
		eventOnChange(rec, &dnsv1.DNSEndpoint{}, tc.before, tc.after, []string{dnsv1.ConditionReady}, quiet)
		if got := len(rec.Events); got != tc.want {
			t.Errorf("%s: %d Events, want %d", tc.name, got, tc.want)
		}
	}
}
