package zonestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// ErrNotReady is the readiness check's error until the zone objects are loaded.
var ErrNotReady = errors.New("zone store not loaded from its objects yet")

// Syncer watches the zone ConfigMaps and installs every consistent zone version into a
// zonedb.Store; it removes a zone whose head is deleted. It is a controller-runtime
// manager.Runnable that runs in every replica, leader or not. Create it with Objects.Syncer.
type Syncer struct {
	o     *Objects
	store *zonedb.Store
	queue workqueue.TypedRateLimitingInterface[string]
	ready atomic.Bool
	// installed maps a zone key to the origin and creation time of the version installed, to
	// uninstall it when its head is deleted. Only the worker goroutine touches it.
	installed map[string]installedZone
}

type installedZone struct {
	origin  string
	created time.Time
}

// Syncer returns the Runnable that feeds store from the objects.
func (o *Objects) Syncer(store *zonedb.Store) *Syncer {
	return &Syncer{o: o, store: store, installed: map[string]installedZone{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second))}
}

// NeedLeaderElection is false: every replica serves, so every replica loads.
func (s *Syncer) NeedLeaderElection() bool { return false }

// Ready is the readyz check (healthz.Checker): ErrNotReady until the watch has listed the
// objects and every zone in that list was installed (or found corrupt, logged).
func (s *Syncer) Ready(*http.Request) error {
	if !s.ready.Load() {
		return ErrNotReady
	}
	return nil
}

// Start watches the objects until ctx ends. Errors: the watch never synced before ctx ended.
func (s *Syncer) Start(ctx context.Context) error {
	go func() { <-ctx.Done(); s.queue.ShutDown() }()
	factory := informers.NewSharedInformerFactoryWithOptions(s.o.opts.Client, 0, informers.WithNamespace(s.o.opts.Namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = LabelStore + "=" + StoreVersion }))
	cms := factory.Core().V1().ConfigMaps()
	informer, lister := cms.Informer(), cms.Lister()
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onObject,
		UpdateFunc: func(_, obj any) { s.onObject(obj) },
		DeleteFunc: s.onDelete,
	})
	if err != nil {
		return fmt.Errorf("watch zone objects: %w", err)
	}
	start := time.Now()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	// The registration has synced once the handler got every object of the first list.
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced, reg.HasSynced) {
		return nil // ctx ended
	}
	// The first load runs here, before readiness; the worker then follows the changes.
	for s.queue.Len() > 0 {
		if !s.processNext(ctx, lister) {
			return nil
		}
	}
	s.ready.Store(true)
	s.o.opts.Log.Info("zone store loaded from its objects", "zones", len(s.installed), "namespace", s.o.opts.Namespace,
		"after", time.Since(start).Round(time.Millisecond).String())
	for s.processNext(ctx, lister) {
	}
	return nil
}

func (s *Syncer) onObject(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	s.o.remember(cm)
	s.queue.Add(cm.Labels[LabelZone])
}

func (s *Syncer) onDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	s.o.forget(cm.Name)
	s.queue.Add(cm.Labels[LabelZone])
}

// processNext handles one queued zone key; false once the queue shut down.
func (s *Syncer) processNext(ctx context.Context, lister listersv1.ConfigMapLister) bool {
	k, shutdown := s.queue.Get()
	if shutdown || ctx.Err() != nil {
		return false
	}
	defer s.queue.Done(k)
	if err := s.sync(k, lister.ConfigMaps(s.o.opts.Namespace)); err != nil {
		s.o.opts.Log.Error(err, "load a zone from its objects", "zoneKey", k)
		if s.queue.NumRequeues(k) < 5 {
			s.queue.AddRateLimited(k)
			return true
		}
	}
	s.queue.Forget(k)
	return true
}

// sync installs the zone of key k from the watched objects, or uninstalls it when its head is
// gone. Objects from different writes (a head whose shard hashes do not match the shards: a
// write in progress, or a writer that stopped between its shard and head writes) are waited
// for while a version of the zone is served; otherwise they are installed as found, and
// logged (the next write makes them consistent). Errors: corrupt objects.
func (s *Syncer) sync(k string, cms listersv1.ConfigMapNamespaceLister) error {
	start := time.Now()
	head, err := cms.Get(HeadName(k))
	if apierrors.IsNotFound(err) {
		if z, ok := s.installed[k]; ok {
			s.store.Uninstall(z.origin, z.created)
			delete(s.installed, k)
		}
		return nil
	}
	if err != nil {
		return err
	}
	raw, err := gunzip(head.BinaryData[keyHead])
	if err != nil {
		return fmt.Errorf("head %s: %w", head.Name, err)
	}
	origin, serial, _, err := zonedb.HeadShards(raw)
	if err != nil {
		return fmt.Errorf("head %s: %w", head.Name, err)
	}
	shards, consistent, err := s.shards(k, head, cms)
	if err != nil {
		return fmt.Errorf("zone %s: %w", origin, err)
	}
	if !consistent {
		if _, served := s.installed[k]; served {
			s.o.opts.Log.V(1).Info("zone objects are from different writes; waiting for the writer", "zone", origin, "serial", serial)
			return nil
		}
		s.o.opts.Log.Info("zone objects are from different writes (a writer stopped between them); serving them as found",
			"zone", origin, "serial", serial)
	}
	v, err := s.store.DecodeShards(raw, shards)
	if err != nil {
		return err
	}
	s.store.Install(v)
	s.installed[k] = installedZone{origin: v.Origin(), created: v.Created()}
	s.o.opts.Metrics.loaded(time.Since(start).Seconds())
	return nil
}

// shards returns the zone's shards (nil where missing), and whether each matches the head's
// hash of it.
func (s *Syncer) shards(k string, head *corev1.ConfigMap, cms listersv1.ConfigMapNamespaceLister) ([][]byte, bool, error) {
	var hashes []string
	if err := json.Unmarshal([]byte(head.Data[keyHashes]), &hashes); err != nil {
		return nil, false, fmt.Errorf("head %s shard hashes: %w", head.Name, err)
	}
	if n, _ := strconv.Atoi(head.Labels[LabelShards]); n != len(hashes)+1 {
		return nil, false, fmt.Errorf("head %s: %d shards, %d hashes", head.Name, n, len(hashes))
	}
	first, err := gunzip(head.BinaryData[keyShard])
	if err != nil {
		return nil, false, fmt.Errorf("head %s: %w", head.Name, err)
	}
	out, consistent := [][]byte{first}, true
	for i, want := range hashes {
		cm, err := cms.Get(ShardName(k, i+1))
		if err != nil {
			out, consistent = append(out, nil), false
			continue
		}
		consistent = consistent && hash(cm.BinaryData[keyShard]) == want
		b, err := gunzip(cm.BinaryData[keyShard])
		if err != nil {
			return nil, false, fmt.Errorf("shard %s: %w", cm.Name, err)
		}
		out = append(out, b)
	}
	return out, consistent, nil
}
