package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
)

const testVPC = "vpc-0123456789abcdef0"

func private(c *aws.Config) { c.PrivateZoneVPCID, c.PrivateZoneVPCRegion = testVPC, "eu-west-1" }

func TestPrivateZoneCreateFindIdempotent(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	ctx := context.Background()
	p := newProvider(t, fake, private)
	spec := provider.ZoneSpec{Name: "corp.test", CallerReference: "ref-priv", Tags: map[string]string{"k": "v"}}
	z, err := p.EnsureZone(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if priv, vpc := fake.ZoneVPC(z.ID); !priv || vpc.VPCID != testVPC || vpc.VPCRegion != "eu-west-1" {
		t.Fatalf("zone %s private=%v vpc=%+v, want private in %s/eu-west-1", z.ID, priv, vpc, testVPC)
	}
	if z.CallerReference != "ref-priv" || z.Tags["k"] != "v" {
		t.Errorf("zone %+v", z)
	}
	// Found again, by this and by a new provider instance.
	for i, q := range []*aws.Provider{p, newProvider(t, fake, private)} {
		again, err := q.EnsureZone(ctx, spec)
		if err != nil || again.ID != z.ID {
			t.Fatalf("ensure #%d = %+v, %v; want %s", i+2, again, err, z.ID)
		}
	}
	// Another private zone of that name for another caller reference: conflict.
	if _, err := p.EnsureZone(ctx, provider.ZoneSpec{Name: "corp.test", CallerReference: "other"}); !errors.Is(err, provider.ErrZoneConflict) {
		t.Fatalf("second private zone: %v, want ErrZoneConflict", err)
	}
	// Region defaults to Config.Region.
	q := newProvider(t, fake, func(c *aws.Config) { c.PrivateZoneVPCID = testVPC })
	z2, err := q.EnsureZone(ctx, provider.ZoneSpec{Name: "other.test", CallerReference: "ref-2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, vpc := fake.ZoneVPC(z2.ID); vpc.VPCRegion != "us-east-1" {
		t.Errorf("VPC region %q, want the provider's us-east-1", vpc.VPCRegion)
	}
	if _, err := aws.New(ctx, aws.Config{PrivateZoneVPCRegion: "eu-west-1"}); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Errorf("New with a VPC region and no VPC ID: %v", err)
	}
}

func TestPublicPrivateCoexist(t *testing.T) {
	for _, privateFirst := range []bool{false, true} {
		name := "public first"
		if privateFirst {
			name = "private first"
		}
		t.Run(name, func(t *testing.T) {
			fake := route53fake.New()
			t.Cleanup(fake.Close)
			ctx := context.Background()
			pub, priv := newProvider(t, fake, nil), newProvider(t, fake, private)
			pubSpec := provider.ZoneSpec{Name: "both.test", CallerReference: "ref-pub"}
			privSpec := provider.ZoneSpec{Name: "both.test", CallerReference: "ref-priv"}
			type step struct {
				p    *aws.Provider
				spec provider.ZoneSpec
			}
			steps := []step{{pub, pubSpec}, {priv, privSpec}}
			if privateFirst {
				steps[0], steps[1] = steps[1], steps[0]
			}
			ids := map[string]string{}
			for round := range 2 {
				for _, s := range steps {
					z, err := s.p.EnsureZone(ctx, s.spec)
					if err != nil {
						t.Fatalf("round %d, %s: %v", round, s.spec.CallerReference, err)
					}
					if round == 0 {
						ids[s.spec.CallerReference] = z.ID
					} else if z.ID != ids[s.spec.CallerReference] {
						t.Fatalf("round 2, %s: zone %s, want %s", s.spec.CallerReference, z.ID, ids[s.spec.CallerReference])
					}
				}
			}
			if ids["ref-pub"] == ids["ref-priv"] {
				t.Fatalf("one zone %s for both", ids["ref-pub"])
			}
			if p, _ := fake.ZoneVPC(ids["ref-pub"]); p {
				t.Errorf("public zone is private")
			}
			if p, _ := fake.ZoneVPC(ids["ref-priv"]); !p {
				t.Errorf("private zone is public")
			}
			zones, err := pub.ListZones(ctx)
			if err != nil || len(zones) != 2 {
				t.Fatalf("ListZones = %v, %v; want 2 zones", zones, err)
			}
		})
	}
}

// TestPrivateProviderIgnoresForeignPublicZone: a foreign public zone of the
// name is no conflict for a private provider, and a foreign private one none
// for a public provider.
func TestPrivateProviderIgnoresForeignPublicZone(t *testing.T) {
	fake := route53fake.New()
	t.Cleanup(fake.Close)
	ctx := context.Background()
	pubID := fake.AddForeignZone("x.test", "console-pub")
	privID := fake.AddForeignPrivateZone("y.test", "console-priv", "vpc-1", "us-east-1")
	z, err := newProvider(t, fake, private).EnsureZone(ctx, provider.ZoneSpec{Name: "x.test", CallerReference: "a"})
	if err != nil || z.ID == pubID {
		t.Fatalf("private EnsureZone beside a public zone = %+v, %v", z, err)
	}
	z, err = newProvider(t, fake, nil).EnsureZone(ctx, provider.ZoneSpec{Name: "y.test", CallerReference: "b"})
	if err != nil || z.ID == privID {
		t.Fatalf("public EnsureZone beside a private zone = %+v, %v", z, err)
	}
}

func apply(t *testing.T, p *aws.Provider, zoneID string, chs ...provider.Change) error {
	t.Helper()
	return p.ApplyChanges(context.Background(), zoneID, chs)
}

func find(t *testing.T, p *aws.Provider, zoneID string, k provider.RecordSetKey) (provider.RecordSet, bool) {
	t.Helper()
	sets, err := p.ListRecordSets(context.Background(), zoneID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		if s.Key() == k {
			return s, true
		}
	}
	return provider.RecordSet{}, false
}

func TestAliasRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   provider.RecordSet
		want map[string]string // normalised ProviderSpecific; "" = the zone ID
	}{
		{"defaults", provider.RecordSet{Name: "apex-alias.example.test", Type: "A", Targets: []string{"WWW.example.test."},
			ProviderSpecific: map[string]string{"alias": "true"}},
			map[string]string{"alias": "true", "aws/evaluate-target-health": "true", "aws/target-hosted-zone": ""}},
		{"explicit, other zone", provider.RecordSet{Name: "lb.example.test", Type: "AAAA", Targets: []string{"dualstack.my-lb-1.us-east-1.elb.amazonaws.com"},
			ProviderSpecific: map[string]string{"alias": "true", "aws/evaluate-target-health": "false", "aws/target-hosted-zone": "Z35SXDOTRQ7X7K"}},
			map[string]string{"alias": "true", "aws/evaluate-target-health": "false", "aws/target-hosted-zone": "Z35SXDOTRQ7X7K"}},
		{"weighted via aws/weight", provider.RecordSet{Name: "w.example.test", Type: "A", SetIdentifier: "blue", Targets: []string{"www.example.test"},
			ProviderSpecific: map[string]string{"alias": "true", "aws/weight": "20", "aws/target-hosted-zone": "/hostedzone/"}},
			map[string]string{"alias": "true", "aws/evaluate-target-health": "true", "aws/target-hosted-zone": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, p, z := setup(t, nil)
			www := aSet("www.example.test")
			if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &www}); err != nil {
				t.Fatal(err)
			}
			in := tc.in
			if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &in}); err != nil {
				t.Fatal(err)
			}
			got, ok := find(t, p, z.ID, provider.RecordSetKey{Name: in.Name, Type: in.Type, SetIdentifier: in.SetIdentifier})
			if !ok {
				t.Fatalf("alias %s not listed", in.Key())
			}
			want := provider.RecordSet{Name: in.Name, Type: in.Type, SetIdentifier: in.SetIdentifier,
				Targets: []string{dnswire.Dotless(in.Targets[0])}, ProviderSpecific: map[string]string{}}
			for k, v := range tc.want { // listed in the shortest form: defaults left out
				if v == "" || (k == aws.KeyTargetHostedZone && v == z.ID) || (k == aws.KeyEvaluateTargetHealth && v == "true") {
					continue
				}
				want.ProviderSpecific[k] = v
			}
			if in.SetIdentifier != "" {
				w := int64(20)
				want.Weight = &w
			}
			if !got.Equal(want) {
				t.Fatalf("listed %+v (%v), want %+v (%v)", got, got.ProviderSpecific, want, want.ProviderSpecific)
			}
			// The listed set is an exact Before: delete it.
			if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionDelete, Before: &got}); err != nil {
				t.Fatalf("delete listed alias: %v", err)
			}
			if _, ok := find(t, p, z.ID, got.Key()); ok {
				t.Fatal("alias still listed after delete")
			}
		})
	}
}

func TestAliasUpdateEvaluateTargetHealth(t *testing.T) {
	_, p, z := setup(t, nil)
	www := aSet("www.example.test")
	al := provider.RecordSet{Name: "example.test", Type: "A", Targets: []string{"www.example.test"},
		ProviderSpecific: map[string]string{"alias": "true"}}
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &www}, provider.Change{Action: provider.ActionCreate, After: &al}); err != nil {
		t.Fatal(err)
	}
	cur, _ := find(t, p, z.ID, al.Key())
	next := cur.Clone()
	next.ProviderSpecific["aws/evaluate-target-health"] = "false"
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionUpdate, Before: &cur, After: &next}); err != nil {
		t.Fatal(err)
	}
	got, _ := find(t, p, z.ID, al.Key())
	if !got.Equal(next) {
		t.Fatalf("after update %v, want %v", got.ProviderSpecific, next.ProviderSpecific)
	}
	// A stale Before (evaluate-target-health true) now conflicts.
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionUpdate, Before: &cur, After: &next}); !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
}

func TestWeightFromProviderSpecific(t *testing.T) {
	_, p, z := setup(t, nil)
	rs := provider.RecordSet{Name: "w.example.test", Type: "A", TTL: 60, SetIdentifier: "green", Targets: []string{"192.0.2.7"},
		ProviderSpecific: map[string]string{"aws/weight": "7"}}
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &rs}); err != nil {
		t.Fatal(err)
	}
	got, ok := find(t, p, z.ID, rs.Key())
	if !ok || got.Weight == nil || *got.Weight != 7 || len(got.ProviderSpecific) != 0 {
		t.Fatalf("listed %+v, want weight 7 and no providerSpecific", got)
	}
	// Weight and aws/weight may both be given when equal.
	w := int64(7)
	same := rs.Clone()
	same.Weight = &w
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionDelete, Before: &same}); err != nil {
		t.Fatalf("delete with equal Weight and aws/weight: %v", err)
	}
}

func TestProviderSpecificValidation(t *testing.T) {
	_, p, z := setup(t, nil)
	alias := func(mod func(*provider.RecordSet)) provider.RecordSet {
		rs := provider.RecordSet{Name: "a.example.test", Type: "A", Targets: []string{"www.example.test"},
			ProviderSpecific: map[string]string{"alias": "true"}}
		mod(&rs)
		return rs
	}
	w := int64(3)
	for _, tc := range []struct {
		name string
		rs   provider.RecordSet
		want error
		msg  string
	}{
		{"alias two targets", alias(func(r *provider.RecordSet) { r.Targets = append(r.Targets, "x.example.test") }), provider.ErrInvalidChange, "exactly one target"},
		{"alias CNAME", alias(func(r *provider.RecordSet) { r.Type = "CNAME" }), provider.ErrInvalidChange, "type A or AAAA"},
		{"alias TXT", alias(func(r *provider.RecordSet) { r.Type = "TXT" }), provider.ErrInvalidChange, "type A or AAAA"},
		{"alias TTL", alias(func(r *provider.RecordSet) { r.TTL = 300 }), provider.ErrInvalidChange, "set recordTTL 0"},
		{"alias bad value", alias(func(r *provider.RecordSet) { r.ProviderSpecific["alias"] = "yes" }), provider.ErrInvalidChange, `"alias"`},
		{"bad evaluate-target-health", alias(func(r *provider.RecordSet) { r.ProviderSpecific["aws/evaluate-target-health"] = "maybe" }), provider.ErrInvalidChange, "aws/evaluate-target-health"},
		{"unknown aws/ key", alias(func(r *provider.RecordSet) { r.ProviderSpecific["aws/geolocation-country-code"] = "DE" }), provider.ErrInvalidChange, "aws/geolocation-country-code"},
		{"unknown other key", alias(func(r *provider.RecordSet) { r.ProviderSpecific["foo"] = "bar" }), provider.ErrNotCapable, `"foo"`},
		{"alias keys without alias", provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"},
			ProviderSpecific: map[string]string{"aws/evaluate-target-health": "true"}}, provider.ErrInvalidChange, `needs "alias"`},
		{"weight not integer", provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, SetIdentifier: "s", Targets: []string{"192.0.2.1"},
			ProviderSpecific: map[string]string{"aws/weight": "heavy"}}, provider.ErrInvalidChange, "aws/weight"},
		{"weight over 255", provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, SetIdentifier: "s", Targets: []string{"192.0.2.1"},
			ProviderSpecific: map[string]string{"aws/weight": "256"}}, provider.ErrInvalidChange, "aws/weight"},
		{"weight without set identifier", provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"},
			ProviderSpecific: map[string]string{"aws/weight": "3"}}, provider.ErrInvalidChange, "set identifier"},
		{"weight differs from Weight", provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, SetIdentifier: "s", Weight: &w, Targets: []string{"192.0.2.1"},
			ProviderSpecific: map[string]string{"aws/weight": "4"}}, provider.ErrInvalidChange, "differs"},
		{"alias bad target", alias(func(r *provider.RecordSet) { r.Targets = []string{"not a name"} }), provider.ErrInvalidChange, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := tc.rs
			err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &rs})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
		})
	}
}

func TestFakeRejectsAliasWithTTL(t *testing.T) {
	// The fake, like Route 53, refuses an alias that also has a TTL or records;
	// driven through the raw SDK since the provider never sends one.
	fake, _, z := setup(t, nil)
	err := aws.RawAliasWithTTL(context.Background(), fake, z.ID)
	if !errors.Is(err, provider.ErrInvalidChange) || !strings.Contains(err.Error(), "Expected exactly one of") {
		t.Fatalf("alias with TTL: %v, want InvalidChangeBatch", err)
	}
}

func TestFakeServesAliasOverDNS(t *testing.T) {
	fake, p, z := setup(t, nil)
	www := aSet("www.example.test")
	same := provider.RecordSet{Name: "example.test", Type: "A", Targets: []string{"www.example.test"}, ProviderSpecific: map[string]string{"alias": "true"}}
	other := provider.RecordSet{Name: "lb.example.test", Type: "A", Targets: []string{"my-lb.elb.amazonaws.com"},
		ProviderSpecific: map[string]string{"alias": "true", "aws/target-hosted-zone": "Z35SXDOTRQ7X7K"}}
	if err := apply(t, p, z.ID, provider.Change{Action: provider.ActionCreate, After: &www},
		provider.Change{Action: provider.ActionCreate, After: &same}, provider.Change{Action: provider.ActionCreate, After: &other}); err != nil {
		t.Fatal(err)
	}
	q := func(name string) *dns.Msg {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, err := dns.Exchange(m, fake.DNSAddr())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := q("example.test.")
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.1" || r.Answer[0].Header().Name != "example.test." {
		t.Fatalf("alias to www answered %v", r.Answer)
	}
	if r := q("lb.example.test."); len(r.Answer) != 0 {
		t.Fatalf("alias to another zone answered %v, want nothing", r.Answer)
	}
}
