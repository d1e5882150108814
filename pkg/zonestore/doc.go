// Package zonestore keeps the embedded DNS server's zones in Kubernetes ConfigMaps of the
// manager's namespace, so that every replica serves the current zones (docs/design.md, "Every
// replica serves the current zones").
//
// What it owns:
//   - Objects, a zonedb.Backend: the leader's local provider writes each zone version (one
//     store transaction, one flush) as one head ConfigMap, holding the zone's metadata, SOA
//     (serial included) and shard 0, plus one ConfigMap per further shard, each gzipped under
//     the object size limit; a flush writes only the shards whose bytes changed, then the head,
//     with optimistic concurrency (resourceVersion);
//   - Syncer, a manager Runnable in every replica (the leader's included): it watches those
//     ConfigMaps and installs each consistent zone version into the replica's zonedb.Store
//     (Store.Install, which goes through the store's single publish point), and it is the
//     replica's readiness: not ready until the objects are listed and installed.
//
// What it must not do: answer DNS, or know about the provider interface (pkg/provider/local
// adapts the store); write anything but the ConfigMaps it labels LabelStore.
package zonestore
