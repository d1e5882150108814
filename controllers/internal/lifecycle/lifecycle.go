package lifecycle

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
)

// Object is a kind the lifecycle reconciles: a typed object of this API group (its metadata an
// embedded metav1.ObjectMeta, its conditions behind dnsv1.ConditionsAccessor).
type Object interface {
	client.Object
	metav1.ObjectMetaAccessor
	dnsv1.ConditionsAccessor
}

// FinalizerWrite is how Reconcile adds and removes the finalizer: the controllers of the four
// kinds use one of these two.
type FinalizerWrite int

const (
	// ByPatch adds the finalizer before Normal runs and removes it after Delete, each with a
	// merge patch of metadata.finalizers under the object's resourceVersion (the DNSZone and Gslb
	// controllers). A patch, not an Update: an Update sends the whole spec back, and under an
	// older CRD without this release's schema defaults (docs/install.md, "Upgrade") the zero
	// values a Go type cannot omit, such as a Gslb's spec.strategy.type "", fail its validation.
	ByPatch FinalizerWrite = iota
	// WithFirstWrite hands Normal the Update that adds the finalizer (addFinalizer), for Normal to
	// run beside its first write (publish.Options.Prepare, the DNSRecord controller): a deferred
	// reconcile writes nothing to the API server, and the first write does not wait for the
	// finalizer's round trip. Once Normal has returned, the object takes the metadata that
	// Update stored, and the status patch locks on its version. A Normal may also never call it
	// (the DNSEndpoint controller): then only an object created with the finalizer (a DNSZone's
	// parent link) is held until Delete has released what it owns, and one without it is
	// released once gone (Gone; publish.Inflight.Gone), which spares the API server one write per
	// object. Removed with an Update.
	WithFirstWrite
)

// Result is what a Normal phase returns besides its error.
type Result struct {
	ctrl.Result
	// Deferred: the phase judged nothing yet (publish.Verdict.SkipsStatus) and set nothing in
	// status; Reconcile writes no status and returns Result and the error as they are.
	Deferred bool
}

// Lifecycle is one controller's reconcile: the skeleton of this package around that controller's
// phases. Build one per Reconcile call (it holds no state); every field but Forget and Quiet is
// required.
type Lifecycle[T Object] struct {
	// Client reads the object (through Ledger) and writes its finalizer and status.
	Client client.Client
	// Recorder receives the condition Events of the status commit.
	Recorder record.EventRecorder
	// Ledger reads past a cache older than this process's last status write and records each
	// write (status.Ledger); nil reads the cache only.
	Ledger *status.Ledger
	// New returns an empty object of the kind, to read into.
	New func() T
	// Finalizer names the finalizer that holds the object until Delete has released what it
	// owns; FinalizerWrite says how it is written.
	Finalizer      string
	FinalizerWrite FinalizerWrite
	// Status returns pointers to o's status struct and to its observedGeneration: Reconcile
	// compares the first before and after Normal to decide whether to write, and sets the
	// second to o's generation.
	Status func(o T) (status any, observedGeneration *int64)
	// Events are the condition types whose changes the commit emits as Events; Quiet the
	// reasons whose first appearance as True emits none (status.Update.Types and Quiet).
	Events, Quiet []string
	// Normal is the phase of a live object that holds the finalizer (or, WithFirstWrite, is
	// about to): it reads, computes and writes what the object owns, and sets o's status, which
	// Reconcile then commits. addFinalizer is nil unless FinalizerWrite is WithFirstWrite and the
	// object has no finalizer yet; Normal then calls it before its first write outside the
	// cluster, or never to hold no finalizer. Its Result and error are Reconcile's, unless the
	// commit fails.
	Normal func(ctx context.Context, o T, addFinalizer func(context.Context) error) (Result, error)
	// Delete is the phase of an object being deleted that still holds the finalizer: it releases
	// what the object owns. A zero ctrl.Result and no error mean everything is released, and
	// Reconcile removes the finalizer; anything else is returned as it is, to retry.
	Delete func(ctx context.Context, o T) (ctrl.Result, error)
	// Forget, when set, drops what this process keeps in memory for the object at key: called
	// when it is not found, and when its deletion has begun (before Delete, finalizer or not).
	Forget func(key client.ObjectKey)
	// Gone, when set, is called after Forget when the object is not found: what the process
	// wrote for an object that was deleted before its finalizer was added (publish.Options.Async
	// adds it after the write) has no Delete phase to release it. Its Result and error are
	// Reconcile's.
	Gone func(ctx context.Context, key client.ObjectKey) (ctrl.Result, error)
}

// Reconcile reads the object at req and runs its lifecycle (see the package doc). A missing
// object is not an error. Errors: the read's, the finalizer write's (wrapped "add finalizer: ",
// "remove finalizer: "), the phases', and the status write's joined to Normal's. A status write
// refused because the object changed since it was read (status.ErrStale) is no error: it
// returns status.StaleRequeue() and emits no Event.
func (l *Lifecycle[T]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	o := l.New()
	if err := l.Ledger.Get(ctx, l.Client, req.NamespacedName, o); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		l.forget(req.NamespacedName)
		if l.Gone != nil {
			return l.Gone(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, nil
	}
	if !o.GetDeletionTimestamp().IsZero() {
		return l.reconcileDelete(ctx, o)
	}
	return l.reconcileNormal(ctx, o)
}

func (l *Lifecycle[T]) forget(key client.ObjectKey) {
	if l.Forget != nil {
		l.Forget(key)
	}
}

// reconcileDelete runs Delete on an object that holds the finalizer, then removes it.
func (l *Lifecycle[T]) reconcileDelete(ctx context.Context, o T) (ctrl.Result, error) {
	l.Ledger.Forget(o)
	l.forget(client.ObjectKeyFromObject(o))
	if !controllerutil.ContainsFinalizer(o, l.Finalizer) {
		return ctrl.Result{}, nil
	}
	res, err := l.Delete(ctx, o)
	if err != nil || !res.IsZero() {
		return res, err
	}
	if err := l.removeFinalizer(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	return ctrl.Result{}, nil
}

// reconcileNormal adds the finalizer, runs Normal and commits the status it set.
func (l *Lifecycle[T]) reconcileNormal(ctx context.Context, o T) (ctrl.Result, error) {
	var addFinalizer func(context.Context) error
	stored := func() (T, bool) { var zero T; return zero, false }
	if l.FinalizerWrite == WithFirstWrite {
		addFinalizer, stored = addFinalizerLater(l.Client, o, l.Finalizer)
	} else if err := l.patchFinalizer(ctx, o, controllerutil.AddFinalizer); err != nil {
		return ctrl.Result{}, fmt.Errorf("add finalizer: %w", err)
	}
	base, err := deepCopy(o)
	if err != nil {
		return ctrl.Result{}, err
	}
	res, err := l.Normal(ctx, o, addFinalizer)
	if res.Deferred {
		return res.Result, err
	}
	if withFinalizer, ok := stored(); ok {
		// Normal is done with the object: it takes the stored metadata, and the status patch's
		// lock is the version the finalizer's Update wrote (the Update left the status as it was).
		takeMetadata(o, withFinalizer)
		base = withFinalizer
	}
	return l.commit(ctx, o, base, res.Result, err)
}

// commit writes o's status against base (status.Commit) and returns Normal's res and err, or
// what the write's failure makes of them.
func (l *Lifecycle[T]) commit(ctx context.Context, o, base T, res ctrl.Result, err error) (ctrl.Result, error) {
	newStatus, observedGeneration := l.Status(o)
	oldStatus, _ := l.Status(base)
	*observedGeneration = o.GetGeneration()
	perr := status.Commit(ctx, l.Client, l.Recorder, status.Update{Obj: o, Base: base, New: newStatus, Old: oldStatus,
		After: o.GetConditions(), Before: base.GetConditions(), Types: l.Events, Quiet: l.Quiet, Ledger: l.Ledger})
	switch {
	case errors.Is(perr, status.ErrStale):
		return status.StaleRequeue(), nil
	case perr != nil:
		return ctrl.Result{}, errors.Join(err, perr)
	}
	return res, err
}

// deepCopy returns a deep copy of o. Errors: o's DeepCopyObject is of another type.
func deepCopy[T client.Object](o T) (T, error) {
	cp, ok := o.DeepCopyObject().(T)
	if !ok {
		return cp, fmt.Errorf("cannot copy a %T", o)
	}
	return cp, nil
}

// takeMetadata replaces dst's metadata with src's (as dst.ObjectMeta = src.ObjectMeta would).
func takeMetadata(dst, src metav1.ObjectMetaAccessor) {
	d, dok := dst.GetObjectMeta().(*metav1.ObjectMeta)
	s, sok := src.GetObjectMeta().(*metav1.ObjectMeta)
	if dok && sok {
		*d = *s
	}
}
