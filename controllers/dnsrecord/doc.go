// Package dnsrecord reconciles DNSRecords: one contributor's endpoints merged into record sets
// that several clusters share (dnsplane API contract, "DNSRecord").
//
// What it owns: planning each record in Shared mode (pkg/plan) and writing it through the zone
// writer; the DryRun approval flow, as for DNSEndpoints; stamping this contributor's heartbeat
// on the registry records it writes at rootHost; registering each record with the heartbeat
// reporter (pkg/heartbeat), which refreshes heartbeats and re-checks peers every interval; and
// the Ready and Healthy conditions, status.owners and the HeartbeatFailing Event.
//
// What it must not do: write or delete another contributor's targets or registry records (the
// plan guarantees it), requeue on heartbeats, or hold package-level mutable state.
package dnsrecord
