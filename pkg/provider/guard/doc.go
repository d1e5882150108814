// Package guard wraps a provider.Provider with the protections every DNS API needs and no
// provider should implement twice (docs/design.md, "The provider layer"):
//
//   - a client-side rate limit per credential set: one *rate.Limiter (golang.org/x/time/rate)
//     shared by every Provider built from the same credentials, one token per API request,
//     list pages included;
//   - back-off with jitter on throttling (provider.ErrThrottled), never shorter than the
//     backend's Retry-After (provider.ThrottledError.RetryAfter), never past the caller's
//     deadline (k8s.io/apimachinery's wait.Backoff computes the jittered steps);
//   - batch splitting, the only one in dnsplane (Batches): provider.SplitBatches by the wrapped
//     provider's declared Capabilities, each change counted by the provider's own
//     provider.RequestSizer where it has one, so that each batch is one request of the provider,
//     a throttled batch is retried alone and batches already applied are not sent again; the
//     record sets a provider.ZoneDrainer must delete before DeleteZone go through the same
//     splitter;
//   - a ListZones cache with a TTL, dropped by EnsureZone and DeleteZone;
//   - the same rate limit and retries on the wrapped provider's signer calls
//     (provider.SignerSource: KeySigner, ManagedSigner), each call one token.
//
// It must not change what the wrapped provider does: it never edits a Change, never retries an
// error other than throttling (a conflict or an invalid change is the caller's to handle), and
// holds no package-level mutable state.
package guard
