package app

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// syncAfterCache reports synced from its n-th WaitForCacheSync on, and counts the calls made
// with a context not done yet (each would have polled every 100 ms).
type syncAfterCache struct {
	cache.Cache
	n, calls, live int
}

func (c *syncAfterCache) WaitForCacheSync(ctx context.Context) bool {
	c.calls++
	if ctx.Err() == nil {
		c.live++
	}
	return c.calls >= c.n
}

func TestSyncWaitCache_LooksUntilSynced(t *testing.T) {
	inner := &syncAfterCache{n: 4}
	if !(syncWaitCache{Cache: inner}).WaitForCacheSync(context.Background()) {
		t.Fatal("WaitForCacheSync = false, want true")
	}
	if inner.calls != 4 || inner.live != 0 {
		t.Errorf("wrapped cache asked %d times, %d of them with a live context; want 4, 0", inner.calls, inner.live)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	never := &syncAfterCache{n: 1 << 30}
	if (syncWaitCache{Cache: never}).WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync with ctx done and nothing synced = true, want false")
	}
}

// doneChecker is a DoneChecker over a channel.
type doneChecker chan struct{}

func (d doneChecker) Name() string          { return "test" }
func (d doneChecker) Done() <-chan struct{} { return d }

// lateRegistration syncs when its channel closes; asked records HasSyncedChecker's calls.
type lateRegistration struct {
	done  doneChecker
	asked atomic.Int32
}

func (r *lateRegistration) HasSynced() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

func (r *lateRegistration) HasSyncedChecker() toolscache.DoneChecker {
	r.asked.Add(1)
	return r.done
}

// fakeInformer hands out reg from every AddEventHandler*, and closes its channel once handed
// out when deliver is set (the informer's listener delivering the objects listed).
type fakeInformer struct {
	cache.Informer
	synced  bool
	deliver bool
	reg     *lateRegistration
}

func (f *fakeInformer) HasSynced() bool { return f.synced }

func (f *fakeInformer) hand() toolscache.ResourceEventHandlerRegistration {
	if f.deliver {
		go close(f.reg.done)
	}
	return f.reg
}

func (f *fakeInformer) AddEventHandler(toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.hand(), nil
}

func (f *fakeInformer) AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandler, time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.hand(), nil
}

func (f *fakeInformer) AddEventHandlerWithOptions(toolscache.ResourceEventHandler, toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.hand(), nil
}

func TestSyncWaitInformer_HandlerOfASyncedInformerReturnsSynced(t *testing.T) {
	adds := map[string]func(syncWaitInformer) (toolscache.ResourceEventHandlerRegistration, error){
		"AddEventHandler": func(i syncWaitInformer) (toolscache.ResourceEventHandlerRegistration, error) {
			return i.AddEventHandler(toolscache.ResourceEventHandlerFuncs{})
		},
		"AddEventHandlerWithResyncPeriod": func(i syncWaitInformer) (toolscache.ResourceEventHandlerRegistration, error) {
			return i.AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandlerFuncs{}, time.Minute)
		},
		"AddEventHandlerWithOptions": func(i syncWaitInformer) (toolscache.ResourceEventHandlerRegistration, error) {
			return i.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{}, toolscache.HandlerOptions{})
		},
	}
	for name, add := range adds {
		t.Run(name+"/synced informer", func(t *testing.T) {
			f := &fakeInformer{synced: true, deliver: true, reg: &lateRegistration{done: make(doneChecker)}}
			reg, err := add(syncWaitInformer{Informer: f})
			if err != nil || !reg.HasSynced() {
				t.Errorf("registration synced at return = %v (err %v), want true", reg.HasSynced(), err)
			}
		})
		t.Run(name+"/informer not synced", func(t *testing.T) {
			f := &fakeInformer{reg: &lateRegistration{done: make(doneChecker)}}
			reg, err := add(syncWaitInformer{Informer: f})
			if err != nil || reg.HasSynced() || f.reg.asked.Load() != 0 {
				t.Errorf("registration synced %v, its checker asked %d times (err %v); want an unsynced one returned at once",
					reg.HasSynced(), f.reg.asked.Load(), err)
			}
		})
	}
}
