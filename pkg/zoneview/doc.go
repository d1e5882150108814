// Package zoneview indexes one read of a zone's record sets for planning (Snapshot): its TXT
// registry (registry.NewIndex), its managed sets by key and by owner name, and its delegation
// points.
//
// It sits below pkg/plan, which plans against a Snapshot, and pkg/zonewriter, which builds one
// per read of a zone and shares it among every planner of that read; so the writer caches the
// index without importing the planner.
//
// What it must not do: perform I/O, read a clock, decide what to write (pkg/plan's job) or hold
// package-level mutable state. A Snapshot is immutable once built.
package zoneview
