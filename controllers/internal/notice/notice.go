// Package notice adapts the scraper's notifications (scraper.Notice) to controller-runtime: a
// Source that enqueues one reconcile.Request per Notice. It keeps pkg/scraper free of the API
// types and of controller-runtime's events.
package notice

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dnsplane/dnsplane/pkg/scraper"
)

// Source returns a controller-runtime Source that enqueues reconcile.Request{Key} for each
// Notice received on ch, until the controller's context ends or ch is closed. Its Start returns
// at once; the work queue deduplicates repeated keys.
func Source(ch <-chan scraper.Notice) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go forward(ctx, ch, q)
		return nil
	})
}

// forward moves Notices from ch to q until ctx ends or ch is closed.
// Keys adapts a channel of object keys (the Served check's notices, served.Tracker.Events) to a
// controller-runtime source: each key becomes one reconcile request.
func Keys(ch <-chan types.NamespacedName) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case k, ok := <-ch:
					if !ok {
						return
					}
					q.Add(reconcile.Request{NamespacedName: k})
				}
			}
		}()
		return nil
	})
}

func forward(ctx context.Context, ch <-chan scraper.Notice, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-ch:
			if !ok {
				return
			}
			q.Add(reconcile.Request{NamespacedName: n.Key})
		}
	}
}
