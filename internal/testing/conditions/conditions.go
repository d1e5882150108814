// Package conditions reads and waits for the status conditions of dnsplane's objects in tests,
// through the accessor interface of the API (apis/v1alpha1.ConditionsAccessor), never a switch
// on the kind: the one condition wait of the controllers', the composition root's, the chart's
// and the e2e tests. It is imported by tests only; it asserts nothing but what a caller asks
// for, and its waits fail only at a hang deadline (testrun.Eventually).
package conditions

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// Of returns obj's status.conditions (the object's own slice); it fails when obj is not a kind
// of dnsplane's (a dnsv1.ConditionsAccessor).
func Of(obj runtime.Object) ([]metav1.Condition, error) {
	a, ok := obj.(dnsv1.ConditionsAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no status conditions", obj)
	}
	return a.GetConditions(), nil
}

// ObservedGeneration returns obj's status.observedGeneration, read from its unstructured form
// (every kind of dnsplane's has one); 0 when obj has none.
func ObservedGeneration(obj runtime.Object) (int64, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return 0, fmt.Errorf("status.observedGeneration of %T: %w", obj, err)
	}
	g, _, err := unstructured.NestedInt64(u, "status", "observedGeneration")
	return g, err
}

// Get re-reads obj through c (into obj) and returns its condition typ. It fails when the read
// fails, obj has no status conditions (Of), or there is no condition typ yet.
func Get(ctx context.Context, c client.Reader, obj client.Object, typ string) (*metav1.Condition, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	conds, err := Of(obj)
	if err != nil {
		return nil, err
	}
	cond := meta.FindStatusCondition(conds, typ)
	if cond == nil {
		return nil, fmt.Errorf("no %s condition yet", typ)
	}
	return cond, nil
}

// Want is what a wait asks of one condition.
type Want struct {
	// Status is the condition's status.
	Status metav1.ConditionStatus
	// Reason is the condition's reason; "" accepts any.
	Reason string
	// Current also asks that the condition's observedGeneration, when set, is not behind the
	// object's metadata.generation.
	Current bool
	// In names where the object is (a cluster) in a failing wait's message; "" for none.
	In string
	// Message, when set, must accept the condition's message too.
	Message func(string) bool
}

// Match returns nil when cond (of obj) is what w asks for, and otherwise an error naming what it
// is.
func (w Want) Match(obj client.Object, cond *metav1.Condition) error {
	if cond.Status != w.Status || (w.Reason != "" && cond.Reason != w.Reason) {
		return fmt.Errorf("%s=%s reason %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	if w.Message != nil && !w.Message(cond.Message) {
		return fmt.Errorf("%s=%s reason %s, message not the one awaited: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	if w.Current && cond.ObservedGeneration != 0 && cond.ObservedGeneration < obj.GetGeneration() {
		return fmt.Errorf("condition of generation %d, object at %d", cond.ObservedGeneration, obj.GetGeneration())
	}
	return nil
}

// Check re-reads obj through c and returns its condition typ with nil when it is what w asks
// for; otherwise the condition as it is (nil when there is none yet) and why it is not.
func Check(ctx context.Context, c client.Reader, obj client.Object, typ string, w Want) (*metav1.Condition, error) {
	cond, err := Get(ctx, c, obj, typ)
	if err != nil {
		return nil, err
	}
	return cond, w.Match(obj, cond)
}

// Wait re-reads obj through c every 100 ms until its condition typ is what w asks for, and
// returns that condition. It fails the test, naming obj, typ, w and the last mismatch, when the
// deadline passes first: timeout, raised to testrun.HangTimeout (testrun.Eventually). Each read
// has a deadline of one minute.
func Wait(t testing.TB, c client.Reader, obj client.Object, typ string, w Want, timeout time.Duration) *metav1.Condition {
	t.Helper()
	var last *metav1.Condition
	testrun.Eventually(t, timeout, w.describe(obj, typ), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cond, err := Check(ctx, c, obj, typ, w)
		if cond != nil {
			last = cond
		}
		return err
	})
	return last
}

func (w Want) describe(obj client.Object, typ string) string {
	s := fmt.Sprintf("%T %s/%s %s=%s/%s", obj, obj.GetNamespace(), obj.GetName(), typ, w.Status, w.Reason)
	if w.In != "" {
		s = w.In + ": " + s
	}
	return s
}

// Ready reports whether obj is Ready=True for its current generation: status.observedGeneration
// equals metadata.generation. An object of another group is never Ready.
func Ready(obj client.Object) bool {
	conds, err := Of(obj)
	if err != nil || !meta.IsStatusConditionTrue(conds, dnsv1.ConditionReady) {
		return false
	}
	observed, err := ObservedGeneration(obj)
	return err == nil && observed == obj.GetGeneration()
}

// CountReady lists each of lists through c with opts and returns how many of their items are
// Ready (Ready). Errors are the List's.
func CountReady(ctx context.Context, c client.Reader, opts []client.ListOption, lists ...client.ObjectList) (int, error) {
	n := 0
	for _, l := range lists {
		if err := c.List(ctx, l, opts...); err != nil {
			return 0, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return 0, err
		}
		for _, it := range items {
			if o, ok := it.(client.Object); ok && Ready(o) {
				n++
			}
		}
	}
	return n, nil
}
