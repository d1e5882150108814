// Package validator runs the DNSSEC validators that tests check signed answers with: a
// validating Unbound on loopback (StartUnbound), asking the servers under test through stub
// zones, and BIND's delv (DelvAnchors, Delv) with a static-ds trust anchor. It is imported by
// tests only and imports nothing of dnsplane but internal/testing.
package validator
