package app

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blocking is a RoundTripper whose requests wait for release; it records how many were inside
// at once.
type blocking struct {
	release       chan struct{}
	inside, maxIn atomic.Int64
	entered       chan *http.Request
}

func (b *blocking) RoundTrip(r *http.Request) (*http.Response, error) {
	n := b.inside.Add(1)
	defer b.inside.Add(-1)
	for m := b.maxIn.Load(); n > m && !b.maxIn.CompareAndSwap(m, n); m = b.maxIn.Load() {
	}
	b.entered <- r
	<-b.release
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// TestLimitInFlight_BoundsShortRequestsAndLetsWatchesPass: with n slots taken, an (n+1)th short
// request waits while a watch goes through at once; every request is answered in the end, and
// never more than n short ones were inside at once.
func TestLimitInFlight_BoundsShortRequestsAndLetsWatchesPass(t *testing.T) {
	const n, requests = 3, 10
	b := &blocking{release: make(chan struct{}), entered: make(chan *http.Request, requests+1)}
	rt := limitInFlight(n)(b)
	get := func(url string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var wg sync.WaitGroup
	for range requests {
		wg.Go(func() {
			if _, err := rt.RoundTrip(get("https://api.test/apis/dnsplane.io/v1alpha1/dnsendpoints")); err != nil {
				t.Error(err)
			}
		})
	}
	for range n {
		<-b.entered
	}
	wg.Go(func() {
		if _, err := rt.RoundTrip(get("https://api.test/apis/dnsplane.io/v1alpha1/dnsendpoints?watch=true")); err != nil {
			t.Error(err)
		}
	})
	select {
	case r := <-b.entered:
		if r.URL.Query().Get("watch") != "true" {
			t.Fatalf("a short request went in past the limit of %d: %s", n, r.URL)
		}
	case <-time.After(time.Minute): // catches a hang only
		t.Fatal("a watch waited for a slot")
	}
	close(b.release)
	wg.Wait()
	if got := b.maxIn.Load(); got > n+1 {
		t.Fatalf("%d requests inside at once, want at most %d short ones and the watch", got, n)
	}
}
