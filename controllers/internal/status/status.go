// Package status holds the condition and Event helpers shared by dnsplane's reconcilers: set a
// condition, emit an Event when a condition changes, and patch status only when it changed.
// It owns no reconcile logic.
package status

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Set sets condition typ on conds with the object's generation. It returns true when the status
// or reason changed.
func Set(conds *[]metav1.Condition, generation int64, typ string, ok bool, reason, msg string) bool {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(*conds, typ)
	changed := old == nil || old.Status != s || old.Reason != reason
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation})
	return changed
}

// SetUnknown sets condition typ to Unknown with the object's generation, for a condition that
// cannot be judged (a disabled object, nothing to check yet).
func SetUnknown(conds *[]metav1.Condition, generation int64, typ, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: reason, Message: msg, ObservedGeneration: generation})
}

// IsTrue reports whether condition typ is True.
func IsTrue(conds []metav1.Condition, typ string) bool {
	return meta.IsStatusConditionTrue(conds, typ)
}

// EventOnChange emits one Event per condition whose status or reason differs between before and
// after: Normal when it became True, Warning when False.
func EventOnChange(rec record.EventRecorder, obj runtime.Object, before, after []metav1.Condition, types ...string) {
	if rec == nil {
		return
	}
	for _, t := range types {
		a := meta.FindStatusCondition(after, t)
		if a == nil {
			continue
		}
		b := meta.FindStatusCondition(before, t)
		if b != nil && b.Status == a.Status && b.Reason == a.Reason {
			continue
		}
		kind := "Normal"
		if a.Status != metav1.ConditionTrue {
			kind = "Warning"
		}
		rec.Event(obj, kind, a.Reason, fmt.Sprintf("%s=%s: %s", t, a.Status, a.Message))
	}
}

// Patch writes obj's status with a merge patch against base, only if the status changed. The
// caller passes pointers to the two status structs for the comparison.
func Patch(ctx context.Context, c client.Client, obj, base client.Object, newStatus, oldStatus any) error {
	if equality.Semantic.DeepEqual(newStatus, oldStatus) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}
