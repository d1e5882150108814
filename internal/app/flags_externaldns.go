package app

import (
	"errors"
	"flag"
	"fmt"

	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// externalDNSFlags are the flags named after external-dns' own (docs/migrating-from-external-dns.md):
// its --policy, and its TXT registry's options, which find the records of the owner
// --adopt-external-dns-owner takes over.
type externalDNSFlags struct {
	policy                                   string
	adoptOwner                               string
	txtPrefix, txtSuffix, txtWildcardReplace string
}

func (f *externalDNSFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.policy, "policy", string(plan.PolicySync), "Which record-set changes DNSEndpoints write, as external-dns' --policy: sync (create, update, delete), upsert-only (never delete) or create-only (never update or delete); a DNSEndpoint's spec.policy overrides it.")
	fs.StringVar(&f.adoptOwner, "adopt-external-dns-owner", "", "external-dns --txt-owner-id whose record sets DNSEndpoints with the same names take over, with no gap: dnsplane's registry record first, the set only if it differs, external-dns' TXT records last. Empty = none; other owners' sets stay OwnershipConflict.")
	fs.StringVar(&f.txtPrefix, "txt-prefix", "", "external-dns' --txt-prefix, so that its TXT registry records are found (may hold %{record_type}).")
	fs.StringVar(&f.txtSuffix, "txt-suffix", "", "external-dns' --txt-suffix (may hold %{record_type}); exclusive with --txt-prefix, as in external-dns.")
	fs.StringVar(&f.txtWildcardReplace, "txt-wildcard-replacement", "", "external-dns' --txt-wildcard-replacement: the label its registry names use for a leading '*'.")
}

func (f externalDNSFlags) validate() error {
	var errs []error
	if _, err := plan.ParsePolicy(f.policy); err != nil {
		errs = append(errs, fmt.Errorf("--policy: %w", err))
	}
	if f.txtPrefix != "" && f.txtSuffix != "" {
		errs = append(errs, errors.New("--txt-prefix and --txt-suffix are mutually exclusive, as in external-dns"))
	}
	return errors.Join(errs...)
}

// plan returns the policy and the external-dns registry settings; validate has checked them.
func (f externalDNSFlags) plan() (plan.Policy, plan.ExternalDNS) {
	p, _ := plan.ParsePolicy(f.policy)
	return p, plan.ExternalDNS{
		AdoptOwner: f.adoptOwner,
		Naming:     registry.ExternalNaming{Prefix: f.txtPrefix, Suffix: f.txtSuffix, WildcardReplacement: f.txtWildcardReplace},
	}
}
