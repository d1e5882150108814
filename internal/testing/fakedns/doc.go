// Package fakedns serves the zones of dnsplane's in-repo cloud fakes (route53fake, clouddnsfake,
// azurefake) over DNS on loopback, so that a zone created through a fake's API answers SOA, NS and
// its records as it would from the cloud's name servers, and a DNSZone whose Secret sets
// DNS_ADDRESS to the fake's DNS address reaches ZoneAvailable.
//
// What it owns:
//   - the DNS side every fake shares: a miekg/dns server on 127.0.0.1 (one free port for UDP and
//     TCP) answering authoritatively from a Source, a function that returns the fake's current
//     zones in canonical provider.RecordSet form and is called once per query, so answers always
//     follow the fake's API state;
//   - the parsing of zone-file style values (RecordSet: dns.NewRR on "name ttl IN TYPE value")
//     that the fakes use to turn what they store into canonical record sets;
//   - starting on first use and stopping with the fake (Lazy), and the API server beside it
//     (Front: what every fake embeds).
//
// Answers follow RFC 1034 §4.3.2 without recursion, as the clouds' authoritative servers do:
// REFUSED for names in no zone; AA set; the zone's SOA in the authority section of NXDOMAIN and
// NODATA (RFC 2308, also for empty non-terminals, RFC 8020); CNAME chasing within the zone;
// wildcards (RFC 4592); referrals below NS sets under the apex, with glue; EDNS0 (RFC 6891) and
// truncation of UDP answers. Several record sets of one name and type (weighted routing) are
// answered as the union of their records: the fakes do not model the clouds' weighted choice.
// Zone transfers are REFUSED.
//
// What it must not do:
//   - know any fake's storage or API: each fake converts its own state in its Source;
//   - keep package-level mutable state: the sockets and the Source belong to a Server;
//   - be used outside tests: it is part of the test toolkit (internal/testing) and serves only
//     loopback.
package fakedns
