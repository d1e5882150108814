// Package geo owns the pure rules of the geo Gslb strategy (docs/design.md, "Geo
// answers") and the GeoIP database they read:
//
//   - ParseRegion reads a geoRegions key: an ISO 3166-1 alpha-2 country ("DE"), a MaxMind
//     continent ("continent:EU") or a canonical CIDR ("203.0.113.0/24");
//   - Resolve applies the fallback order: each geo tag's targets while it has healthy ones, else
//     the default tag's, else every other tag's together;
//   - EncodeLabels and DecodeLabels carry one geo tag's regions on a record set, as its
//     provider-specific labels, from the Gslb controller to the embedded server;
//   - Table matches a client address to a geo tag (the longest CIDR, then the country, then the
//     continent, else the default) and computes the scope: a subnet around the client whose
//     every address gets the same tag (RFC 7871 §7.2.1, SCOPE PREFIX-LENGTH);
//   - DB is a MaxMind-format mmdb (maxminddb-golang/v2) held in memory and reloaded when its
//     file changes (Run).
//
// It must not talk to Kubernetes or DNS (no API types, no wire messages: controllers/gslb and
// pkg/dnsserver map them), must not decide health (it takes the healthy targets as given), and
// has no package-level mutable state.
package geo
