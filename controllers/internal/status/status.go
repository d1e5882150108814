// Package status holds the condition and Event helpers shared by dnsplane's reconcilers: set a
// condition, emit an Event when a condition changes, and patch status only when it changed.
// It owns no reconcile logic.
package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
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

// EventOnChange emits one Event per condition whose status or reason differs between before and
// after: Normal when it became True or waits (dnsv1.IsWaitingReason), Warning when it failed.
// Callers emit only after the status that records the change was written (Commit does both), so
// that a reconcile of a stale copy, whose write is refused, emits nothing.
func EventOnChange(rec record.EventRecorder, obj runtime.Object, before, after []metav1.Condition, types ...string) {
	eventOnChange(rec, obj, before, after, types, nil)
}

// eventOnChange is EventOnChange, except that a condition that was absent before and is now True
// with a reason in quiet (an object's routine first success) emits nothing.
func eventOnChange(rec record.EventRecorder, obj runtime.Object, before, after []metav1.Condition, types, quiet []string) {
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
		if b == nil && a.Status == metav1.ConditionTrue && slices.Contains(quiet, a.Reason) {
			continue
		}
		kind := corev1.EventTypeNormal
		if a.Status != metav1.ConditionTrue && !dnsv1.IsWaitingReason(a.Reason) {
			kind = corev1.EventTypeWarning
		}
		rec.Event(obj, kind, a.Reason, fmt.Sprintf("%s=%s: %s", t, a.Status, a.Message))
	}
}

// Update is one reconcile's status change, for Commit.
type Update struct {
	// Obj is the object with its new status; Base the copy read at the start of the reconcile.
	Obj, Base client.Object
	// New and Old point to the two status structs, for the comparison.
	New, Old any
	// After and Before are the two condition lists; Types the conditions whose changes emit an
	// Event.
	After, Before []metav1.Condition
	Types         []string
	// Quiet lists reasons whose first appearance, on a condition of Types that was absent and is
	// now True, emits no Event: an object's routine first success, such as Published
	// (docs/design.md, "Kubernetes API requests"). Later transitions, failures and waits emit
	// as usual.
	Quiet []string
	// Ledger, when set, records the write (see Ledger).
	Ledger *Ledger
}

// ErrStale: the status was not written because the object changed since it was read, typically
// a reconcile that started from a cached copy older than the last status write. Nothing was
// emitted; the caller requeues and the next reconcile reads the current object.
var ErrStale = errors.New("status not written: the object changed since it was read")

// Commit writes u's status with Patch and then emits the condition Events (EventOnChange). A
// reconcile of a stale copy (its base resourceVersion is no longer current) gets ErrStale and
// emits nothing: otherwise two reconciles, the second from a cache that has not seen the first's
// write yet, would each see the same transition and emit the same Event twice. Other errors are
// the API server's, wrapped.
func Commit(ctx context.Context, c client.Client, rec record.EventRecorder, u Update) error {
	if err := Patch(ctx, c, u.Obj, u.Base, u.New, u.Old); err != nil {
		return err
	}
	if u.Obj.GetResourceVersion() != u.Base.GetResourceVersion() {
		u.Ledger.Wrote(u.Obj)
	}
	eventOnChange(rec, u.Obj, u.Before, u.After, u.Types, u.Quiet)
	return nil
}

// Patch writes obj's status with a merge patch against base, only if the status changed, under
// base's resourceVersion (optimistic lock). The caller passes pointers to the two status structs
// for the comparison. A refused precondition returns ErrStale (wrapping the Conflict).
func Patch(ctx context.Context, c client.Client, obj, base client.Object, newStatus, oldStatus any) error {
	if equality.Semantic.DeepEqual(newStatus, oldStatus) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%w: %w", ErrStale, err)
		}
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

// StaleRequeue is the result of a reconcile whose status write got ErrStale: soon again, once
// the cache holds the object's current version.
func StaleRequeue() ctrl.Result { return ctrl.Result{RequeueAfter: 200 * time.Millisecond} }

// Ledger remembers, per object UID, the newest resourceVersion this process wrote or read live,
// so that a reconcile never starts from a cached copy older than its own last status write. The
// informer cache lags behind a process's own writes: a reconcile that read a copy from before
// that write, computed a status equal to the copy's, and so wrote nothing, would leave the
// object with the status it had just replaced (a lost update: a DNSZone stuck at
// AwaitingScrape). Commit, with Update.Ledger set, records each status write. A nil Ledger, or
// one with no Live reader, reads the cache only. Safe for concurrent use.
type Ledger struct {
	// Live reads past the cache (the manager's APIReader).
	Live client.Reader
	rv   sync.Map // types.UID -> resourceVersion string
}

// Get reads key into obj from cache, then again from Live when this process has recorded a
// version of the object and the cached one is another: a version older than this process's own
// write, or a newer one from another writer (one live read per such version). Errors are the
// readers', unwrapped, so that apierrors.IsNotFound and client.IgnoreNotFound work on them.
func (l *Ledger) Get(ctx context.Context, cache client.Reader, key client.ObjectKey, obj client.Object) error {
	if err := cache.Get(ctx, key, obj); err != nil {
		return err
	}
	if l == nil || l.Live == nil {
		return nil
	}
	rv, ok := l.rv.Load(obj.GetUID())
	if !ok || rv == obj.GetResourceVersion() {
		return nil
	}
	if err := l.Live.Get(ctx, key, obj); err != nil {
		return err
	}
	l.rv.Store(obj.GetUID(), obj.GetResourceVersion())
	return nil
}

// Wrote records obj's resourceVersion as this process's last write of it.
func (l *Ledger) Wrote(obj client.Object) {
	if l != nil {
		l.rv.Store(obj.GetUID(), obj.GetResourceVersion())
	}
}

// Forget drops obj's entry, for an object being deleted or gone.
func (l *Ledger) Forget(obj client.Object) {
	if l != nil {
		l.rv.Delete(obj.GetUID())
	}
}
