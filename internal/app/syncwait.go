package app

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The manager's start waits twice for its informers: the manager for the caches to sync, then
// each controller's watch for its event handler to have received the objects listed. Both waits
// are client-go's WaitForCacheSync, which looks every 100 ms, so a start whose lists take 30 ms
// waited 200 ms (0.2 s of the 0.5 s first sync at 1,000 endpoints, make bench's
// dnsplane.log from "starting server" to the controllers' workers). syncWaitCache answers both
// as soon as the informers are done; nothing else about the cache changes.

// syncPoll is how often syncWaitCache.WaitForCacheSync looks at the informers.
const syncPoll = 5 * time.Millisecond

// handlerSyncMax bounds how long an event handler added to a synced informer waits in
// AddEventHandler for the informer's objects (syncWaitInformer); past it, the handler is
// returned as is and its caller waits for it as before.
const handlerSyncMax = 5 * time.Second

// newSyncWaitCache is the manager's cache.NewCacheFunc: controller-runtime's cache, whose
// waits for sync (syncWaitCache) react within syncPoll.
func newSyncWaitCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	return syncWaitCache{Cache: c}, nil
}

// syncWaitCache is a cache.Cache whose WaitForCacheSync returns within syncPoll of the
// informers having synced, and whose informers' AddEventHandler returns once the handler has
// received a synced informer's objects (syncWaitInformer).
type syncWaitCache struct {
	cache.Cache
}

// WaitForCacheSync reports, as the wrapped cache's does, whether every informer synced before
// ctx ended (true) or not (false). It asks the wrapped cache with a context already done, which
// looks once instead of every 100 ms, and asks again every syncPoll.
func (c syncWaitCache) WaitForCacheSync(ctx context.Context) bool {
	once, cancel := context.WithCancel(ctx)
	cancel()
	tick := time.NewTicker(syncPoll)
	defer tick.Stop()
	for {
		if c.Cache.WaitForCacheSync(once) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// GetInformer returns the wrapped cache's informer for obj, as a syncWaitInformer.
func (c syncWaitCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return syncWaitInformer{Informer: i}, nil
}

// GetInformerForKind returns the wrapped cache's informer for gvk, as a syncWaitInformer.
func (c syncWaitCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return syncWaitInformer{Informer: i}, nil
}

// syncWaitInformer is an informer whose AddEventHandler, when the informer has synced, returns
// once the new handler has received the informer's objects (its registration's
// HasSyncedChecker, a channel; at most handlerSyncMax), so that a controller's watch finds it
// synced at its first look. On an informer not synced yet it returns at once, as before.
type syncWaitInformer struct {
	cache.Informer
}

// AddEventHandler adds handler (see syncWaitInformer).
func (i syncWaitInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.settled(i.Informer.AddEventHandler(handler))
}

// AddEventHandlerWithResyncPeriod adds handler (see syncWaitInformer).
func (i syncWaitInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.settled(i.Informer.AddEventHandlerWithResyncPeriod(handler, resync))
}

// AddEventHandlerWithOptions adds handler (see syncWaitInformer).
func (i syncWaitInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.settled(i.Informer.AddEventHandlerWithOptions(handler, opts))
}

// settled waits for reg to sync when the informer has, bounded by handlerSyncMax.
func (i syncWaitInformer) settled(reg toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err != nil || reg == nil || !i.HasSynced() {
		return reg, err
	}
	checker := reg.HasSyncedChecker()
	if checker == nil {
		return reg, nil
	}
	t := time.NewTimer(handlerSyncMax)
	defer t.Stop()
	select {
	case <-checker.Done():
	case <-t.C:
	}
	return reg, nil
}
