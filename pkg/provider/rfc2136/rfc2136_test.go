package rfc2136_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/bindtest"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/guard"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
	"github.com/dnsplane/dnsplane/pkg/provider/rfc2136"
)

type server = bindtest.Server

func startBIND(t testing.TB) *server { return bindtest.Start(t) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestConformance(t *testing.T) {
	s := startBIND(t)
	providertest.Run(t, providertest.Harness{
		New: func(t *testing.T) providertest.Backend {
			zone := s.AddZone(t, "conf")
			return providertest.Backend{
				Provider:       s.Provider(t, s.Secret),
				Restart:        func(t *testing.T) provider.Provider { return s.Provider(t, s.Secret) },
				DNSAddr:        s.Addr(),
				ExistingZoneID: zone,
			}
		},
	})
}

func TestNew_RejectsBadConfigAsInvalidCredentials(t *testing.T) {
	good := rfc2136.Config{Host: "127.0.0.1", KeyName: "k", Secret: "c2VjcmV0"}
	if _, err := rfc2136.New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
	for name, mut := range map[string]func(*rfc2136.Config){
		"no host":        func(c *rfc2136.Config) { c.Host = "" },
		"bad port":       func(c *rfc2136.Config) { c.Port = 70000 },
		"no key name":    func(c *rfc2136.Config) { c.KeyName = "" },
		"secret not b64": func(c *rfc2136.Config) { c.Secret = "not base64!" },
		"bad algorithm":  func(c *rfc2136.Config) { c.Algorithm = "md5-please" },
	} {
		c := good
		mut(&c)
		if _, err := rfc2136.New(c); !errors.Is(err, provider.ErrInvalidCredentials) {
			t.Errorf("%s: New = %v, want ErrInvalidCredentials", name, err)
		}
	}
}

func TestZoneLifecycleIsNotCapableAndUnknownZoneIsNotFound(t *testing.T) {
	s := startBIND(t)
	p := s.Provider(t, s.Secret)
	zone := s.AddZone(t, "life")
	if _, err := p.EnsureZone(ctx(t), provider.ZoneSpec{Name: "x.test", CallerReference: "r"}); !errors.Is(err, provider.ErrNotCapable) {
		t.Errorf("EnsureZone = %v, want ErrNotCapable", err)
	}
	if err := p.DeleteZone(ctx(t), zone); !errors.Is(err, provider.ErrNotCapable) {
		t.Errorf("DeleteZone = %v, want ErrNotCapable", err)
	}
	z, err := p.GetZone(ctx(t), zone)
	if err != nil || z.ID != zone || z.Name != zone || len(z.NameServers) != 1 || z.NameServers[0] != "ns1."+zone {
		t.Errorf("GetZone = %+v, %v", z, err)
	}
	gone := "gone.rfc2136.test"
	rs := provider.RecordSet{Name: "www." + gone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	for name, err := range map[string]error{
		"GetZone":        func() error { _, err := p.GetZone(ctx(t), gone); return err }(),
		"ListRecordSets": func() error { _, err := p.ListRecordSets(ctx(t), gone); return err }(),
		"ApplyChanges":   p.ApplyChanges(ctx(t), gone, []provider.Change{{Action: provider.ActionCreate, After: &rs}}),
	} {
		if !errors.Is(err, provider.ErrZoneNotFound) {
			t.Errorf("%s on an unknown zone: %v, want ErrZoneNotFound", name, err)
		}
	}
}

func TestWrongTSIGSecretIsInvalidCredentials(t *testing.T) {
	s := startBIND(t)
	zone := s.AddZone(t, "badkey")
	p := s.Provider(t, "d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC13cm9uZyE=")
	rs := provider.RecordSet{Name: "www." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	if !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Errorf("ApplyChanges with a wrong secret: %v, want ErrInvalidCredentials", err)
	}
	if _, err := p.ListRecordSets(ctx(t), zone); !errors.Is(err, provider.ErrInvalidCredentials) {
		t.Errorf("ListRecordSets with a wrong secret: %v, want ErrInvalidCredentials", err)
	}
	if strings.Contains(fmt.Sprint(err), "d3Jvbmct") {
		t.Errorf("error leaks the secret: %v", err)
	}
	good := s.Provider(t, s.Secret)
	sets, err := good.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range sets {
		if got.Key() == rs.Key() {
			t.Errorf("the rejected update landed: %s", got)
		}
	}
}

func TestStaleBeforeIsConflictAndChangesNothing(t *testing.T) {
	s := startBIND(t)
	zone := s.AddZone(t, "stale")
	p := s.Provider(t, s.Secret)
	cur := provider.RecordSet{Name: "www." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &cur}}); err != nil {
		t.Fatal(err)
	}
	before, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	stale := cur.Clone()
	stale.Targets = []string{"192.0.2.1"} // a subset is stale too
	next := cur.Clone()
	next.Targets = []string{"192.0.2.9"}
	other := provider.RecordSet{Name: "other." + zone, Type: "TXT", TTL: 60, Targets: []string{"new"}}
	err = p.ApplyChanges(ctx(t), zone, []provider.Change{
		{Action: provider.ActionCreate, After: &other},
		{Action: provider.ActionUpdate, Before: &stale, After: &next},
	})
	if !errors.Is(err, provider.ErrConflict) {
		t.Fatalf("ApplyChanges with a stale Before: %v, want ErrConflict", err)
	}
	after, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("zone changed:\n before %v\n after  %v", before, after)
	}
}

func TestBatchLargerThan64KiBIsSplitAndFullyApplied(t *testing.T) {
	s := startBIND(t)
	zone := s.AddZone(t, "big")
	// Through the guard, the only splitter, as the factory builds the provider.
	p := guard.New(s.Provider(t, s.Secret), guard.Options{})
	const n = 120
	value := strings.Repeat("0123456789", 100) // 1,000 bytes
	var changes []provider.Change
	total := 0
	for i := range n {
		rs := &provider.RecordSet{Name: fmt.Sprintf("t%03d.%s", i, zone), Type: "TXT", TTL: 60, Targets: []string{value + strconv.Itoa(i)}}
		changes = append(changes, provider.Change{Action: provider.ActionCreate, After: rs})
		total += len(rs.Targets[0])
	}
	if total <= 64<<10 {
		t.Fatalf("test data is only %d bytes", total)
	}
	batches := p.Batches(changes)
	if len(batches) < 2 {
		t.Fatalf("%d bytes of TXT in %d batch(es), want a split", total, len(batches))
	}
	if err := p.ApplyChanges(ctx(t), zone, changes); err != nil {
		t.Fatal(err)
	}
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	got := map[provider.RecordSetKey]provider.RecordSet{}
	for _, rs := range sets {
		got[rs.Key()] = rs
	}
	for _, c := range changes {
		if g, ok := got[c.After.Key()]; !ok || !g.Equal(*c.After) {
			t.Fatalf("%s: listed %v", c.After.Key(), g)
		}
	}
	// And all of them are deleted again, conditionally, in batches.
	var dels []provider.Change
	for _, c := range changes {
		dels = append(dels, provider.Change{Action: provider.ActionDelete, Before: c.After})
	}
	if err := p.ApplyChanges(ctx(t), zone, dels); err != nil {
		t.Fatal(err)
	}
	sets, err = p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 3 { // SOA, NS, ns1 A
		t.Errorf("after deleting: %v", sets)
	}
}
