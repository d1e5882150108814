package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/lifecycle"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
)

const finalizer = "dnsplane.io/test"

var key = client.ObjectKey{Namespace: "apps", Name: "z"}

// world is one test's fake API server, with the writes it received by verb, and what the
// lifecycle called.
type world struct {
	c      client.Client
	rec    *record.FakeRecorder
	mu     sync.Mutex
	writes []string // "update", "patch", "status"
	// failStatus, when set, is what every status patch returns.
	failStatus error
	// neverAdd makes Normal leave the addFinalizer it is given uncalled (the DNSEndpoint
	// controller's way).
	neverAdd bool
	normal   int
	deleted  int
	forgot   []client.ObjectKey
}

func newWorld(t *testing.T, objs ...client.Object) *world {
	t.Helper()
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	w := &world{rec: record.NewFakeRecorder(10)}
	count := func(verb string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.writes = append(w.writes, verb)
	}
	w.c = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&dnsv1.DNSZone{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
				count("update")
				return c.Update(ctx, o, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
				count("patch")
				return c.Patch(ctx, o, p, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				count("status")
				if w.failStatus != nil {
					return w.failStatus
				}
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			},
		}).Build()
	return w
}

// lifecycle returns a DNSZone lifecycle on w whose Normal sets ZoneAvailable False
// (reason ProviderError, an Event) and returns res and err, and whose Delete returns delRes and
// delErr.
func (w *world) lifecycle(write lifecycle.FinalizerWrite, res lifecycle.Result, err error, delRes ctrl.Result, delErr error) *lifecycle.Lifecycle[*dnsv1.DNSZone] {
	return &lifecycle.Lifecycle[*dnsv1.DNSZone]{
		Client: w.c, Recorder: w.rec,
		New:       func() *dnsv1.DNSZone { return &dnsv1.DNSZone{} },
		Finalizer: finalizer, FinalizerWrite: write,
		Status: func(z *dnsv1.DNSZone) (any, *int64) { return &z.Status, &z.Status.ObservedGeneration },
		Events: []string{dnsv1.ConditionZoneAvailable},
		Normal: func(ctx context.Context, z *dnsv1.DNSZone, addFinalizer func(context.Context) error) (lifecycle.Result, error) {
			w.normal++
			if res.Deferred {
				return res, err
			}
			// addFinalizer: only WithFirstWrite, and only to an object without the finalizer.
			if (write == lifecycle.WithFirstWrite && !controllerutil.ContainsFinalizer(z, finalizer)) != (addFinalizer != nil) {
				return lifecycle.Result{}, errors.New("addFinalizer given for the wrong write")
			}
			if addFinalizer != nil && !w.neverAdd {
				if err := addFinalizer(ctx); err != nil {
					return lifecycle.Result{}, err
				}
			}
			status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionZoneAvailable, false, dnsv1.ReasonProviderError, "down")
			return res, err
		},
		Delete: func(context.Context, *dnsv1.DNSZone) (ctrl.Result, error) {
			w.deleted++
			return delRes, delErr
		},
		Forget: func(k client.ObjectKey) { w.forgot = append(w.forgot, k) },
	}
}

func (w *world) events() []string {
	var out []string
	for len(w.rec.Events) > 0 {
		out = append(out, <-w.rec.Events)
	}
	return out
}

func zone(finalizers ...string) *dnsv1.DNSZone {
	return &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 3, Finalizers: finalizers}}
}

func TestReconcile_MissingObjectIsNoErrorAndIsForgotten(t *testing.T) {
	w := newWorld(t)
	res, err := w.lifecycle(lifecycle.ByPatch, lifecycle.Result{}, nil, ctrl.Result{}, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil || !res.IsZero() {
		t.Fatalf("Reconcile = %+v, %v; want nothing", res, err)
	}
	if w.normal+w.deleted != 0 || len(w.writes) != 0 || !slices.Equal(w.forgot, []client.ObjectKey{key}) {
		t.Fatalf("normal %d, delete %d, writes %v, forgot %v; want only %v forgotten", w.normal, w.deleted, w.writes, w.forgot, key)
	}
}

// TestReconcile_NormalAddsFinalizerThenCommitsStatus: each FinalizerWrite adds the finalizer
// with its own verb, Normal runs once, and the status it set is written once, with
// observedGeneration and one Event for the changed condition; Normal's result is returned.
func TestReconcile_NormalAddsFinalizerThenCommitsStatus(t *testing.T) {
	for _, tc := range []struct {
		write lifecycle.FinalizerWrite
		verb  string
	}{
		{lifecycle.ByPatch, "patch"},
		{lifecycle.WithFirstWrite, "update"},
	} {
		t.Run(tc.verb, func(t *testing.T) {
			w := newWorld(t, zone())
			want := ctrl.Result{RequeueAfter: time.Minute}
			res, err := w.lifecycle(tc.write, lifecycle.Result{Result: want}, nil, ctrl.Result{}, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if err != nil || res != want {
				t.Fatalf("Reconcile = %+v, %v; want %+v", res, err, want)
			}
			if w.normal != 1 || w.deleted != 0 || !slices.Equal(w.writes, []string{tc.verb, "status"}) {
				t.Fatalf("normal %d, delete %d, writes %v; want Normal once, writes [%s status]", w.normal, w.deleted, w.writes, tc.verb)
			}
			var got dnsv1.DNSZone
			if err := w.c.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			c := meta.FindStatusCondition(got.Status.Conditions, dnsv1.ConditionZoneAvailable)
			if !slices.Equal(got.Finalizers, []string{finalizer}) || got.Status.ObservedGeneration != 3 || c == nil || c.Reason != dnsv1.ReasonProviderError {
				t.Fatalf("stored finalizers %v, observedGeneration %d, ZoneAvailable %+v", got.Finalizers, got.Status.ObservedGeneration, c)
			}
			if ev := w.events(); len(ev) != 1 {
				t.Fatalf("events %q, want one", ev)
			}
		})
	}
}

// TestReconcile_AddFinalizerNeverCalledAddsNone: WithFirstWrite, a Normal that never calls
// addFinalizer leaves the status the only write; an object created with the finalizer keeps it.
func TestReconcile_AddFinalizerNeverCalledAddsNone(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
	}{{"without it", nil}, {"created with it", []string{finalizer}}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, zone(tc.finalizers...))
			w.neverAdd = true
			if _, err := w.lifecycle(lifecycle.WithFirstWrite, lifecycle.Result{}, nil, ctrl.Result{}, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if w.normal != 1 || !slices.Equal(w.writes, []string{"status"}) {
				t.Fatalf("normal %d, writes %v; want Normal once and the status only", w.normal, w.writes)
			}
			var got dnsv1.DNSZone
			if err := w.c.Get(context.Background(), key, &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Finalizers, tc.finalizers) {
				t.Fatalf("stored finalizers %v, want %v", got.Finalizers, tc.finalizers)
			}
		})
	}
}

// TestReconcile_DeferredWritesNothing: a Normal that defers (a zone not judged yet) leaves the
// object as it was: no finalizer, no status, no Event, and its own requeue.
func TestReconcile_DeferredWritesNothing(t *testing.T) {
	w := newWorld(t, zone())
	want := ctrl.Result{RequeueAfter: 5 * time.Second}
	res, err := w.lifecycle(lifecycle.WithFirstWrite, lifecycle.Result{Result: want, Deferred: true}, nil, ctrl.Result{}, nil).
		Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil || res != want || w.normal != 1 || len(w.writes) != 0 || len(w.events()) != 0 {
		t.Fatalf("Reconcile = %+v, %v, normal %d, writes %v; want %+v, no writes and no Event", res, err, w.normal, w.writes, want)
	}
}

// TestReconcile_UnchangedStatusIsNotWritten: an object that has its finalizer and the status
// Normal computes gets no write at all.
func TestReconcile_UnchangedStatusIsNotWritten(t *testing.T) {
	z := zone(finalizer)
	z.Status.ObservedGeneration = 3
	status.Set(&z.Status.Conditions, 3, dnsv1.ConditionZoneAvailable, false, dnsv1.ReasonProviderError, "down")
	for _, write := range []lifecycle.FinalizerWrite{lifecycle.ByPatch, lifecycle.WithFirstWrite} {
		w := newWorld(t, z.DeepCopy())
		if _, err := w.lifecycle(write, lifecycle.Result{}, nil, ctrl.Result{}, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatal(err)
		}
		if w.normal != 1 || len(w.writes) != 0 || len(w.events()) != 0 {
			t.Fatalf("write %d: normal %d, writes %v; want Normal once and no write", write, w.normal, w.writes)
		}
	}
}

// TestReconcile_StatusWriteFailures: a refused lock (the object changed since it was read) is
// no error, requeues soon and emits nothing; any other failure is returned with Normal's error.
func TestReconcile_StatusWriteFailures(t *testing.T) {
	gr := schema.GroupResource{Group: "dnsplane.io", Resource: "dnszones"}
	errNormal, errDown := errors.New("provider down"), errors.New("apiserver down")

	w := newWorld(t, zone(finalizer))
	w.failStatus = apierrors.NewConflict(gr, key.Name, errors.New("stale"))
	res, err := w.lifecycle(lifecycle.ByPatch, lifecycle.Result{}, errNormal, ctrl.Result{}, nil).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if err != nil || res != status.StaleRequeue() || len(w.events()) != 0 {
		t.Fatalf("stale: Reconcile = %+v, %v; want %+v, no error and no Event", res, err, status.StaleRequeue())
	}

	w = newWorld(t, zone(finalizer))
	w.failStatus = errDown
	res, err = w.lifecycle(lifecycle.ByPatch, lifecycle.Result{Result: ctrl.Result{RequeueAfter: time.Minute}}, errNormal, ctrl.Result{}, nil).
		Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	if !errors.Is(err, errNormal) || !errors.Is(err, errDown) || !res.IsZero() || len(w.events()) != 0 {
		t.Fatalf("failed write: Reconcile = %+v, %v; want both errors, no result and no Event", res, err)
	}
}

// TestReconcile_DeleteReleasesThenDropsFinalizer: an object being deleted is forgotten, then
// Delete runs; only its zero result and no error drop the finalizer (and the object goes); an
// object without this finalizer runs no Delete.
func TestReconcile_DeleteReleasesThenDropsFinalizer(t *testing.T) {
	errRelease := errors.New("provider down")
	wait := ctrl.Result{RequeueAfter: time.Second}
	for _, tc := range []struct {
		name       string
		write      lifecycle.FinalizerWrite
		finalizers []string
		res        ctrl.Result
		err        error
		deletes    int
		writes     []string
		gone       bool
	}{
		{"released, by patch", lifecycle.ByPatch, []string{finalizer}, ctrl.Result{}, nil, 1, []string{"patch"}, true},
		{"released, with first write", lifecycle.WithFirstWrite, []string{finalizer}, ctrl.Result{}, nil, 1, []string{"update"}, true},
		{"waiting", lifecycle.ByPatch, []string{finalizer}, wait, nil, 1, nil, false},
		{"failed", lifecycle.ByPatch, []string{finalizer}, ctrl.Result{}, errRelease, 1, nil, false},
		{"not this finalizer", lifecycle.ByPatch, []string{"other.io/keep"}, ctrl.Result{}, nil, 0, nil, false},
		{"not this finalizer, with first write", lifecycle.WithFirstWrite, []string{"other.io/keep"}, ctrl.Result{}, nil, 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := zone(tc.finalizers...)
			now := metav1.Now()
			z.DeletionTimestamp = &now
			w := newWorld(t, z)
			res, err := w.lifecycle(tc.write, lifecycle.Result{}, nil, tc.res, tc.err).Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) || res != tc.res {
				t.Fatalf("Reconcile = %+v, %v; want %+v, %v", res, err, tc.res, tc.err)
			}
			if w.normal != 0 || w.deleted != tc.deletes || !slices.Equal(w.writes, tc.writes) || !slices.Equal(w.forgot, []client.ObjectKey{key}) {
				t.Fatalf("normal %d, delete %d, writes %v, forgot %v; want delete %d, writes %v, %v forgotten",
					w.normal, w.deleted, w.writes, w.forgot, tc.deletes, tc.writes, key)
			}
			err = w.c.Get(context.Background(), key, &dnsv1.DNSZone{})
			if gone := apierrors.IsNotFound(err); gone != tc.gone {
				t.Fatalf("object gone %t (%v), want %t", gone, err, tc.gone)
			}
		})
	}
}
