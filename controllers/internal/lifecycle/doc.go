// Package lifecycle is the reconcile skeleton the DNSZone, DNSEndpoint, DNSRecord and Gslb
// controllers share (Lifecycle.Reconcile): read the object past a stale cache (status.Ledger), a
// missing object is no error; an object being deleted runs its controller's Delete phase, then
// loses its finalizer; a live one gets its finalizer, runs its controller's Normal phase, and has
// the status that phase computed committed once (status.Commit: only when changed, under an
// optimistic lock, with an Event per changed condition). Cluster API's reconcilers have the same
// shape (reconcileNormal / reconcileDelete, status patched on the way out).
//
// It owns the order of those steps, the finalizer's writes and the status write. It must not set
// a condition, decide a requeue or read anything but the object itself: those are the phases',
// which each controller supplies.
package lifecycle
