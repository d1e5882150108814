// Package dnssec is dnsplane's DNSSEC core: a zone's key set (KSK, ZSK or CSK, each with its
// state in a rollover), its encoding in the Secret every replica reads, and the pure signing
// and denial logic that the embedded server and the zone writer use.
//
// What it owns:
//   - the key set: generation of keys per algorithm and role, their states (Generated, Published,
//     Active, Retired), which keys sign which RRsets, the DNSKEY RRset and the DS/CDS/CDNSKEY records
//     derived from the key-signing keys;
//   - the rollover machine (Machine.Next): a pure function from the persisted key set (with the
//     rollover in progress) and what the controller observed (every server answers the key
//     set, every parent server the DS RRset) to the next key set, the DS RRset the parent must
//     hold and when to look again. ZSKs roll by pre-publication, KSKs by double-DS, CSKs by
//     both; each phase waits for its observations and then for the TTLs that matter.
//     TestModelCheck_Rollovers checks the chain of trust against every resolver cache the
//     TTLs allow;
//   - the key set's encoding (KeySet.Marshal, ParseKeySet): one JSON document under the
//     Secret key SecretKey, holding each key's DNSKEY and its private key in BIND's
//     Private-key-format v1.3, so a key can be imported into or exported from BIND, Knot or
//     PowerDNS by hand;
//   - signing (Policy): the RRSIGs of an RRset by every Active key of its role, with inception
//     Skew before and expiration Validity after the start of the Refresh period they are made
//     in, so that every signature of one period is alike;
//   - denial of existence (Chain): the NSEC or NSEC3 chain of a zone version, computed over its
//     names in canonical order or by hash, and the records of each proof (NXDOMAIN, NODATA,
//     wildcard answers, wildcard NODATA); and compact denial (RFC 9824: CompactNXDomain,
//     CompactNoData), one NSEC made per answer at the name asked, next name its Successor.
//
// What it must not do:
//   - talk to Kubernetes, a provider or the network: controllers read and write the Secret,
//     pkg/dnsserver serves what this package signs;
//   - log or return a private key in an error: errors name a key by its tag and role only;
//   - keep package-level mutable state.
package dnssec
