// Package heartbeat keeps and checks the heartbeats of DNSRecord contributors (dnsplane API
// contract, "DNSRecord", "Heartbeats").
//
// A heartbeat is a Unix timestamp in seconds carried by a contributor's registry records of the
// record sets named exactly rootHost (registry.Entry.Heartbeat). It means "this contributor is
// alive and its records are in sync".
//
// What it owns:
//   - the check (Check, EntriesAt, FailingMessage): which contributors of a rootHost are
//     failing, given the zone's registry and a time. It is pure and used both on every reconcile
//     (by the DNSRecord controller, from the zone writer's snapshot) and on every tick;
//   - the Reporter, a controller-runtime Runnable that runs in the leader only and ticks at a
//     fixed rate (a slow tick never delays the next one, and ticks never pile up). Per
//     zone writer and tick it reads the zone once (zonewriter.Writer.Reload), checks every
//     registered rootHost, and writes at most once (one zonewriter.Writer.Apply): the heartbeat
//     refresh of every contributor that may write, and the self-heal of those whose own targets
//     or registry records went missing (a target lost to a race on a provider without
//     conditional writes is restored within one interval);
//   - the gauge dnsplane_dnsrecord_owner_heartbeat_age_seconds{root_host,owner}.
//
// What it must not do:
//   - change or delete another contributor's records: a heartbeat refresh rewrites only the
//     contributor's own registry records at rootHost, and a self-heal submits only
//     plan.Compute's changes for that contributor, which never touch another contributor's
//     registry records and write a shared set as the union of every contributor's registered
//     targets;
//   - make heartbeats look like plan changes, or trigger reconciles: it reports through
//     Options.OnCheck and the gauge only;
//   - decide ownership or merges (package plan and package registry do), talk to a provider
//     other than through the zone writer, or know Kubernetes objects (callers pass Targets);
//   - read the wall clock directly or hold package-level mutable state: the clock is injected
//     (k8s.io/utils/clock), metrics are registered by the caller (NewMetrics).
package heartbeat
