// Package replica is what the controllers that run on every replica share (controllers/signing,
// which feeds the embedded server's signing policies, and controllers/dynupdate's keyring): the
// DNSZone watch they set up without leader election, and the read of a Secret by name through
// the API reader with a logger that discards, so that the Secret's bytes never reach a log.
//
// It owns those two mechanics. It must not decide what a replica does with a DNSZone, write
// anything, or cache a Secret: each controller supplies its own reconciler and its own test of
// which status changes concern it.
package replica
