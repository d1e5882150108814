package requeue

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestPeriodic_SuccessIsReportedAndStillRequeued: the wrapped result has no RequeueAfter (so
// controller-runtime counts it as success), and the request comes back through the controller's
// queue after the delay; errors and plain results pass unchanged. The queue is client-go's.
func TestPeriodic_SuccessIsReportedAndStillRequeued(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	var next reconcile.Result
	p := New(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return next, nil }))
	if err := p.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}

	next = reconcile.Result{RequeueAfter: 50 * time.Millisecond}
	res, err := p.Reconcile(context.Background(), req)
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("got %+v, %v; want a plain success", res, err)
	}
	got := make(chan reconcile.Request, 1)
	go func() {
		item, _ := q.Get()
		got <- item
		q.Done(item)
	}()
	select {
	case item := <-got:
		if item != req {
			t.Fatalf("queued %v, want %v", item, req)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request never came back through the queue")
	}

	next = reconcile.Result{}
	if res, _ := p.Reconcile(context.Background(), req); res != (reconcile.Result{}) {
		t.Fatalf("a plain result changed: %+v", res)
	}
}

// TestDecorate: a nil decorate leaves the reconciler as it is; another wraps it.
func TestDecorate(t *testing.T) {
	inner := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{Requeue: true}, nil
	})
	if res, _ := Decorate(inner, nil).Reconcile(context.Background(), reconcile.Request{}); !res.Requeue {
		t.Errorf("nil decorate: %+v, want the inner result", res)
	}
	wrapped := Decorate(inner, func(r reconcile.Reconciler) reconcile.Reconciler {
		return reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		})
	})
	if res, _ := wrapped.Reconcile(context.Background(), reconcile.Request{}); res.RequeueAfter != time.Second {
		t.Errorf("decorated: %+v, want the decorator's result", res)
	}
}
