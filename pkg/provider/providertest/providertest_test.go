package providertest_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/local"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// brokenEnv selects the broken provider TestBrokenProviderHelper runs the
// suite against, in a child process.
const brokenEnv = "DNSPLANE_PROVIDERTEST_BROKEN"

// broken wraps the local provider and breaks one promise of the contract.
type broken struct {
	*local.Provider
	mode string
}

func (b broken) Capabilities() provider.Capabilities {
	c := b.Provider.Capabilities()
	if b.mode == "misdeclares-batch-limit" {
		c.MaxChangesPerBatch = 100
	}
	return c
}

func (b broken) EnsureZone(ctx context.Context, spec provider.ZoneSpec) (provider.Zone, error) {
	if b.mode == "ignores-caller-reference" {
		if z, err := b.Provider.GetZone(ctx, local.ZoneID(spec.Name)); err == nil {
			return z, nil
		}
	}
	return b.Provider.EnsureZone(ctx, spec)
}

func (b broken) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	sets, err := b.Provider.ListRecordSets(ctx, zoneID)
	if b.mode == "truncates-long-txt" {
		for i := range sets {
			for j, v := range sets[i].Targets {
				if sets[i].Type == "TXT" && len(v) > 255 {
					sets[i].Targets[j] = v[:255]
				}
			}
		}
	}
	return sets, err
}

func (b broken) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	switch b.mode {
	case "misdeclares-batch-limit":
		// Its Capabilities do not describe the request it sends: it declares
		// 100 records per request, the "backend" takes 50, so the guard's
		// batches are rejected.
		if len(changes) > 50 {
			return fmt.Errorf("backend: %d changes exceed 50 per request", len(changes))
		}
	case "unconditional":
		// Addresses sets by key only, overwriting whatever is there.
		current, err := b.Provider.ListRecordSets(ctx, zoneID)
		if err != nil {
			return err
		}
		var fixed []provider.Change
		for _, c := range changes {
			for i := range current {
				if c.Before != nil && current[i].Key() == c.Before.Key() {
					cur := current[i]
					c.Before = &cur
				}
				if c.Action == provider.ActionCreate && current[i].Key() == c.After.Key() {
					cur := current[i]
					c = provider.Change{Action: provider.ActionUpdate, Before: &cur, After: c.After}
				}
			}
			fixed = append(fixed, c)
		}
		changes = fixed
	}
	return b.Provider.ApplyChanges(ctx, zoneID, changes)
}

// TestBrokenProviderHelper is run by TestRun_FailsOnBrokenProviders in a
// child process; on its own it skips.
func TestBrokenProviderHelper(t *testing.T) {
	mode := os.Getenv(brokenEnv)
	if mode == "" {
		t.Skip("helper for TestRun_FailsOnBrokenProviders")
	}
	providertest.Run(t, providertest.Harness{New: func(t *testing.T) providertest.Backend {
		store := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
		return providertest.Backend{Provider: broken{Provider: local.New(store, local.Options{}), mode: mode}}
	}})
}

// TestRun_FailsOnBrokenProviders proves that the suite can fail: each broken
// provider must fail exactly the subtest that pins the promise it breaks.
func TestRun_FailsOnBrokenProviders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in child processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode    string
		failing string
	}{
		{"truncates-long-txt", "ListRoundTripsExactly"},
		{"ignores-caller-reference", "ZoneConflict"},
		{"unconditional", "ConditionalWrites"},
		{"misdeclares-batch-limit", "ThousandChangeBatch"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^TestBrokenProviderHelper$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+tc.mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a provider that %s:\n%s", tc.mode, out)
			}
			if want := "--- FAIL: TestBrokenProviderHelper/" + tc.failing; !strings.Contains(string(out), want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
			if n := strings.Count(string(out), "--- FAIL: TestBrokenProviderHelper/"); n < 1 {
				t.Fatalf("no failing subtest:\n%s", out)
			}
		})
	}
}
