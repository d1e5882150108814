// Package dnsclient owns dnsplane's DNS queries as a client (miekg/dns): the SOA check of a
// hosted zone (with the DO bit and the SOA's RRSIGs for a signed zone: SignedSerial) and the NS
// lookups of the nameserver scraper. Every query runs under a timeout,
// over UDP with a fallback to TCP, and accepts only answers for the question it asked.
//
// It must not resolve recursively or cache: callers decide where to ask.
package dnsclient
