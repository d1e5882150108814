package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/pdnstest"
)

// patchRecords writes objects [0, n) at generation gen into every zone, straight through the
// PowerDNS API, with one registry-like TXT per name.
func patchRecords(ctx context.Context, w *world, n, gen int) error {
	for j := range zones {
		var rrsets []map[string]any
		for i := range n {
			name := hostName(i, j) + "."
			rrsets = append(rrsets,
				map[string]any{"name": name, "type": "A", "ttl": 300, "changetype": "REPLACE",
					"records": []map[string]any{{"content": target(i, j, gen), "disabled": false}}},
				map[string]any{"name": "txt-" + name, "type": "TXT", "ttl": 300, "changetype": "REPLACE",
					"records": []map[string]any{{"content": `"heritage=bench"`, "disabled": false}}})
		}
		body, _ := json.Marshal(map[string]any{"rrsets": rrsets})
		if err := w.pdnsAPI(ctx, http.MethodPatch, "/api/v1/servers/localhost/zones/"+zoneName(j)+".", body, http.StatusNoContent); err != nil {
			return err
		}
	}
	return nil
}

// Against a real PowerDNS (caches off), reading the names by AXFR (queryMax 0) and by A
// queries: the served check returns once every record is there with its target, waits while
// one has the old target, and counts the TXT owner names.
func TestChecker_RealPowerDNS(t *testing.T) {
	for _, queryMax := range []int{0, defaultQueryMax} {
		t.Run(fmt.Sprintf("queryMax=%d", queryMax), func(t *testing.T) {
			srv := pdnstest.Start(t)
			w := &world{pdns: pdnsServer{apiURL: srv.APIURL, dnsAddr: srv.DNSAddr, key: srv.Key}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := w.createZones(ctx); err != nil {
				t.Fatal(err)
			}
			ck := checker{addr: srv.DNSAddr, interval: 20 * time.Millisecond, guard: func() error { return nil }, queryMax: queryMax}
			go func() {
				time.Sleep(200 * time.Millisecond) // the check starts before the records exist
				if err := patchRecords(ctx, w, 3, 0); err != nil {
					t.Error(err)
				}
			}()
			if _, _, err := ck.waitServed(ctx, want(0, 3, 0)); err != nil {
				t.Fatalf("records never served: %v", err)
			}
			short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancelShort()
			if _, missing, err := ck.waitServed(short, want(0, 1, 1)); !errors.Is(err, context.DeadlineExceeded) || missing != zones {
				t.Fatalf("the old target passed for the new one: %v (%d missing, want %d)", err, missing, zones)
			}
			if err := patchRecords(ctx, w, 1, 1); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ck.waitServed(ctx, want(0, 1, 1)); err != nil {
				t.Fatalf("change never served: %v", err)
			}
			zs := []string{zoneName(0) + ".", zoneName(1) + "."}
			if n, err := ck.registryRecords(ctx, zs); err != nil || n != 6 {
				t.Errorf("registryRecords = %d, %v; want 6 (3 per zone)", n, err)
			}
		})
	}
}

// The guard's error ends the wait.
func TestChecker_GuardStops(t *testing.T) {
	stop := errors.New("controller exited")
	ck := checker{addr: "127.0.0.1:1", interval: time.Millisecond, guard: func() error { return stop }}
	if _, _, err := ck.waitServed(context.Background(), want(0, 1, 0)); !errors.Is(err, stop) {
		t.Errorf("waitServed = %v, want the guard's error", err)
	}
}
