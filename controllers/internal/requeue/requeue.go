// Package requeue makes a reconcile that succeeds and asks to run again later count as a
// success in controller-runtime's metrics. It owns no reconcile logic.
//
// controller-runtime v0.25 (pkg/internal/controller/controller.go, reconcileHandler) counts a
// reconcile under controller_runtime_reconcile_total{result} as "error", "requeue_after",
// "requeue" or "success", in that order of precedence: one that returns RequeueAfter is never a
// success. dnsplane's reconcilers end every successful reconcile with RequeueAfter (a periodic
// resync, an SOA poll, a peer query), so standard dashboards read 0 % success. Periodic keeps the
// schedule and reports the outcome: it returns the result with RequeueAfter cleared, which the
// controller counts as success (and Forgets, as for RequeueAfter), and adds the request to the
// controller's own queue after the same delay, as the controller itself would have.
package requeue

import (
	"context"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Queue is the controller's work queue, as a source receives it.
type Queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Periodic wraps a reconciler (see the package doc). Build it with New; it is safe for
// concurrent use.
type Periodic struct {
	inner reconcile.Reconciler
	queue atomic.Pointer[Queue]
}

// New wraps inner.
func New(inner reconcile.Reconciler) *Periodic { return &Periodic{inner: inner} }

// Source hands the controller's queue to p when the controller starts its sources (before any
// worker runs); register it with WatchesRawSource. It delivers no events of its own.
func (p *Periodic) Source() source.Source {
	return source.Func(func(_ context.Context, q Queue) error {
		p.queue.Store(&q)
		return nil
	})
}

// Reconcile runs the inner reconciler. A success with RequeueAfter > 0 is returned as a plain
// success, and the request is added back to the queue after RequeueAfter. Errors, and results
// before the queue is known, pass unchanged.
func (p *Periodic) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := p.inner.Reconcile(ctx, req)
	q := p.queue.Load()
	if err != nil || res.RequeueAfter <= 0 || q == nil {
		return res, err
	}
	(*q).AddAfter(req, res.RequeueAfter)
	res.RequeueAfter = 0
	return res, nil
}

// Complete finishes b with r wrapped in a Periodic: the usual last step of a SetupWithManager.
func Complete(b *builder.Builder, r reconcile.Reconciler) error {
	p := New(r)
	return b.WatchesRawSource(p.Source()).Complete(p)
}

// Decorate is decorate(r), or r when decorate is nil: the composition root's Config.Decorate
// around a reconciler, as every SetupWithManager takes it.
func Decorate(r reconcile.Reconciler, decorate func(reconcile.Reconciler) reconcile.Reconciler) reconcile.Reconciler {
	if decorate == nil {
		return r
	}
	return decorate(r)
}
