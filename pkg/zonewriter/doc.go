// Package zonewriter owns the one path from dnsplane to a provider for record changes: one Writer
// per hosted zone, shared by the DNSEndpoint and DNSRecord controllers and the heartbeat reporter
// (docs/design.md, "The zone writer" and "Provider budgets").
//
// A Writer holds the zone's record sets, read once from the provider and kept current from its
// own writes; it re-reads after the resync interval, after Invalidate, and after any failed
// write. It collects the changes that reconcilers submit within a short window and applies them
// as one ApplyChanges call (the provider splits that call by its own limits), then returns each
// submitter its own result. Submissions whose preconditions (Change.Before) no longer hold
// against the writer's view fail alone with provider.ErrConflict.
//
// It must not decide what to write: plans come from package plan, and ownership from package
// registry. It knows nothing of Kubernetes.
package zonewriter
