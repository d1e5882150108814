package app

import (
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/plan"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

func TestParseFlags_ExternalDNSFlags(t *testing.T) {
	o, _, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := o.config(nil, environ{}); err != nil || cfg.Policy != plan.PolicySync || cfg.ExternalDNS != (plan.ExternalDNS{}) {
		t.Errorf("defaults: policy %q, external-dns %+v, %v; want sync, none", cfg.Policy, cfg.ExternalDNS, err)
	}
	o, _, err = parseFlags([]string{"--policy=upsert-only", "--adopt-external-dns-owner=ext1", "--txt-prefix=pre-%{record_type}-", "--txt-wildcard-replacement=wild"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(nil, environ{})
	want := plan.ExternalDNS{AdoptOwner: "ext1", Naming: registry.ExternalNaming{Prefix: "pre-%{record_type}-", WildcardReplacement: "wild"}}
	if err != nil || cfg.Policy != plan.PolicyUpsertOnly || cfg.ExternalDNS != want {
		t.Errorf("policy %q, external-dns %+v, %v; want upsert-only, %+v", cfg.Policy, cfg.ExternalDNS, err, want)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy=delete-all"}, `--policy: unknown policy "delete-all"`},
		{[]string{"--txt-prefix=a-", "--txt-suffix=-b"}, "--txt-prefix and --txt-suffix are mutually exclusive"},
	} {
		if _, _, err := parseFlags(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error mentioning %q", c.args, err, c.want)
		}
	}
}
