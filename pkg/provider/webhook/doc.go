// Package webhook implements provider.Provider over the external-dns webhook provider protocol
// (sigs.k8s.io/external-dns provider/webhook, v0.22.0; OpenAPI file api/webhook.yaml), media
// type application/external.dns.webhook+json;version=1:
//   - GET /: negotiation; the answer's Content-Type must be that media type, and its body is the
//     webhook's domain filter (include/exclude and regexInclude/regexExclude, as external-dns's
//     code writes it, or {"filters": [...]}, as its OpenAPI file documents it);
//   - GET /records: every endpoint the webhook holds;
//   - POST /records: a plan.Changes document (create, updateOld, updateNew, delete), answered 204;
//   - POST /adjustendpoints: the webhook's normalisation of endpoints before they are written.
//
// It is the provider behind Secrets of type dnsplane.io/webhook (WEBHOOK_URL, WEBHOOK_HEADERS,
// WEBHOOK_BATCH_SIZE); reading the Secret is the factory's job, not this package's.
//
// What it owns:
//   - zone identity: the protocol has no zones, only a domain filter. A zone's ID is its
//     canonical name; a name the filter matches can be adopted (DNSZone spec.zoneID), ListZones
//     lists the filter's include names, and a name outside the filter is
//     provider.ErrZoneNotFound. A zone's record sets are the endpoints at or below its name and
//     not inside a deeper zone of the filter (the NS set at a deeper zone's apex, the delegation,
//     is in both); a name the filter does not match (DomainFilter.Match: external-dns's
//     endpoint.DomainFilter rule and normalisation, exclusions included) is never listed, and a
//     change to one is provider.ErrInvalidChange, since external-dns never sends one;
//   - the mapping between dnsplane's canonical RecordSets and external-dns endpoints: names
//     without trailing dot, TXT values as quoted, escaped character-strings of at most 255 bytes
//     (as external-dns's own TXT registry writes them), other targets in canonical presentation
//     form, set identifiers and provider-specific properties carried both ways;
//   - the request discipline: every request under Config.Timeout (default 30 s) on top of the
//     caller's context, bodies capped at 32 MiB both ways, no redirect followed (a 3xx is an
//     error, so headers never reach another address and a write never turns into a read), and
//     only the statuses external-dns's own client takes as success: 204 for POST /records, 200
//     for GET /records and POST /adjustendpoints, a 2xx for GET /. A write that returns nil was
//     acknowledged with 204 by the webhook itself. Other statuses map onto provider's typed
//     errors (401/403 ErrInvalidCredentials; 429, and 503 with Retry-After, ThrottledError;
//     500 to 510, and any 5xx of GET /, ErrUnavailable, which the guard retries, as external-dns's
//     client retries those; another 4xx of a write ErrInvalidChange), with the webhook's own error
//     text in the message; any other answer (a 5xx from 511 up, a redirect, another 2xx) is a
//     StatusError naming the status and what the protocol answers, never retried;
//   - the size of one write: Capabilities().MaxChangesPerBatch is Config.BatchSize changes per
//     POST /records (RequestCost counts a change as one), and MaxValueBytesPerBatch keeps a
//     request's JSON under the 32 MiB cap, so that the guard splits by both.
//
// What it must not do:
//   - log, return or wrap a header value (Config.Headers hold credentials): errors carry the
//     method, path, status and the webhook's text; every error's text has each header value,
//     each word of one of at least 8 bytes (a token without its "Bearer " scheme) and their
//     JSON spellings redacted, before the webhook's text is cut to 512 bytes, whatever quotes
//     it (an error body, a negotiation's Content-Type or regular expression, the HTTP client);
//   - wait on an answer beyond Config.Timeout: the body is closed when the request's context
//     ends, a 101's bare connection included, and a 1xx answer is an error without a read;
//   - pretend to capabilities the protocol lacks: it has no conditional writes, no zone creation
//     or deletion, and no weighted routing (external-dns has no provider-neutral weight), so
//     Capabilities says so; a weighted set, or one with a set identifier, is
//     provider.ErrNotCapable, and the planner reports NotCapable instead of dropping it. Without
//     conditional writes, shared changes (provider.Change.Shared) are applied by
//     read-merge-write onto the sets as GET /records gives them just before the write, never
//     replaced whole (see ApplyChanges);
//   - write an endpoint the webhook's /adjustendpoints did not return, or returned with other
//     targets (more, fewer or different ones; a respelling is the same): such a set is
//     provider.ErrNotCapable, since the webhook would not hold it;
//   - know about Kubernetes.
package webhook
