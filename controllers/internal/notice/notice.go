// Package notice adapts the notifications of the scraper (scraper.Notice), of the Served
// check (object keys, served.Tracker.Events) and of the zone writers (zones found gone) to
// controller-runtime: a Source that enqueues the reconcile.Requests of each notice. It keeps pkg/scraper and pkg/served free of the API types and of
// controller-runtime's events.
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
	return from(ch, func(n scraper.Notice) types.NamespacedName { return n.Key })
}

// Keys is Source for a channel of object keys (the Served check's notices); a nil channel
// enqueues nothing.
func Keys(ch <-chan types.NamespacedName) source.Source {
	return from(ch, func(k types.NamespacedName) types.NamespacedName { return k })
}

// from enqueues key(n) for each n received on ch, until the controller's context ends or ch is
// closed.
func from[T any](ch <-chan T, key func(T) types.NamespacedName) source.Source {
	return Fan(ch, func(_ context.Context, n T) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key(n)}}
	})
}

// Fan returns a Source that enqueues every request of reqs(ctx, n) for each n received on ch
// (none, one, or several objects a notice concerns, such as the DNSZones of a zone writer that
// found its zone gone), until the controller's context ends or ch is closed. Its Start returns
// at once; the work queue deduplicates repeated keys.
func Fan[T any](ch <-chan T, reqs func(context.Context, T) []reconcile.Request) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case n, ok := <-ch:
					if !ok {
						return
					}
					for _, r := range reqs(ctx, n) {
						q.Add(r)
					}
				}
			}
		}()
		return nil
	})
}
