// Package dnscase states one DNS exchange as data, after the Case type of CoreDNS's plugin/test:
// the question (name, type), the answer expected (rcode, the AA bit, the answer, authority and
// additional sections) and a Check that compares a response with it. Sections are compared in
// order-independent form: every record rendered as "owner TYPE rdata" (no TTL, no class, the owner
// in lower case) and sorted, so a case states what a section holds, not the order a server wrote
// it in. It is imported by tests only.
package dnscase
