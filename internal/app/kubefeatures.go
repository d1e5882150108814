package app

import (
	clientfeatures "k8s.io/client-go/features"
)

// watchListGates is client-go's feature gates with WatchListClient decided by
// --kube-watch-list; every other feature is base's (by default client-go's KUBE_FEATURE_*
// environment variables).
//
// Why off by default: with a watch list (on by default since client-go 1.35) an informer's
// initial list is a stream that the API server ends with a bookmark, and the API server sends
// bookmarks on its own tick, about once a second. Every informer then waits up to that tick
// before it is synced, and nothing reconciles before the caches sync. make bench measured the
// DNSEndpoint controller starting 1.2 s after the manager with the watch list, and 0.2 s
// after it with a paged list, at 1,000 DNSEndpoints.
type watchListGates struct {
	base clientfeatures.Gates
	on   bool
}

// Enabled implements clientfeatures.Gates.
func (g watchListGates) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.on
	}
	return g.base.Enabled(f)
}

// setWatchList makes client-go's informers use a watch list (on) or a paged list (off). It
// replaces client-go's process-wide feature gates, so run calls it once, before any client
// or informer exists.
func setWatchList(on bool) {
	clientfeatures.ReplaceFeatureGates(watchListGates{base: clientfeatures.FeatureGates(), on: on})
}
