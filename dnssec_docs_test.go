package main

import (
	"os"
	"strings"
	"testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestDocs_DNSSECReasons: docs/dnssec.md's "## Reasons" table has a row for every reason of
// the Secure condition, and docs/api.md documents spec.dnssec.
func TestDocs_DNSSECReasons(t *testing.T) {
	raw, err := os.ReadFile("docs/dnssec.md")
	if err != nil {
		t.Fatal(err)
	}
	_, reasons, ok := strings.Cut(string(raw), "\n## Reasons\n")
	if !ok {
		t.Fatal(`docs/dnssec.md has no "## Reasons" section`)
	}
	if i := strings.Index(reasons, "\n## "); i >= 0 {
		reasons = reasons[:i]
	}
	for _, r := range []string{dnsv1.ReasonSecure, dnsv1.ReasonRolloverInProgress, dnsv1.ReasonSigning, dnsv1.ReasonDSPending,
		dnsv1.ReasonChainBroken, dnsv1.ReasonNotSupported, dnsv1.ReasonProviderActionNeeded, dnsv1.ReasonKeysInvalid, dnsv1.ReasonKeysNotCopied, dnsv1.ReasonUnsigned, dnsv1.ReasonUnsigning,
		dnsv1.ReasonAlgorithmChangeNotSupported} {
		if !strings.Contains(reasons, "| `"+r+"` |") {
			t.Errorf(`docs/dnssec.md "## Reasons" has no row for %s`, r)
		}
	}
	api, err := os.ReadFile("docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"### DNSSEC (`spec.dnssec`)", "signatureRefreshSeconds", "cskLifetimeSeconds", "nsec3:", "rolloverPhase", "nextRollover", "source: Generated", "KeysNotCopied"} {
		if !strings.Contains(string(api), field) {
			t.Errorf("docs/api.md does not document %s", field)
		}
	}
}
