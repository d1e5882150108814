// Package signing gives the embedded DNS server of every replica the signing policies of the
// DNSZones it serves (docs/dnssec.md, "Turning it on").
//
// What it owns:
//   - the signer controller (Signer), run on every replica (each replica's server answers and
//     signs): for each DNSZone with spec.dnssec.enabled that holds its zone on a provider that
//     signs online, it reads the key Secret <dnszone>-dnssec by name (never listed or
//     watched; again every Reread, or every Pending until it signs the zone) and calls the
//     server's SetSigning with a policy of its keyset.json and the DNSZone's denial and
//     signature settings; a DNSZone whose dnssec is off or removed is signed the same way
//     (with the defaults when removed) until its key set records the DNSZone controller's
//     turn-off done (dnssec.Unsigning.Done: the DS left the parent and its TTL passed,
//     docs/dnssec.md "Turning it off"); nil then, or when there is no key Secret, the zone is
//     not held, or the DNSZone is gone or being deleted.
//
// What it must not do:
//   - write anything to the API server: the DNSZone controller makes the key Secret and
//     reports the Secure condition (KeysInvalid for a key Secret that is not usable);
//   - replace a working policy with one of a key Secret that is missing, does not parse or
//     holds another zone's keys: the zone keeps the policy it has;
//   - unsign a zone on behalf of a DNSZone that did not sign it (another DNSZone naming the same
//     zone), or a zone whose DNSSEC is off before its key set says the turn-off is done;
//   - log, record or export key material.
package signing
