package notice_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnsplane/dnsplane/controllers/internal/notice"
	"github.com/dnsplane/dnsplane/pkg/scraper"
)

func TestSource_EnqueuesOneRequestPerNoticeKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ch := make(chan scraper.Notice, 2)
	if err := notice.Source(ch).Start(ctx, q); err != nil {
		t.Fatalf("Start: %v", err)
	}
	keys := []types.NamespacedName{{Namespace: "ns", Name: "child"}, {Namespace: "other", Name: "link"}}
	for _, k := range keys {
		ch <- scraper.Notice{Key: k}
	}
	for _, want := range keys {
		got, shutdown := q.Get() // blocks until the forwarder has added the request
		if shutdown {
			t.Fatal("queue shut down")
		}
		if got.NamespacedName != want {
			t.Errorf("enqueued %s, want %s", got.NamespacedName, want)
		}
		q.Done(got)
	}
}

func TestKeys_EnqueuesEachKey(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ch := make(chan types.NamespacedName, 1)
	if err := notice.Keys(ch).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	want := types.NamespacedName{Namespace: "a", Name: "b"}
	ch <- want
	got, _ := q.Get()
	if got.NamespacedName != want {
		t.Fatalf("enqueued %v, want %v", got, want)
	}
}
