package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/internal/testing/webhooktest"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// oracle answers, for each name, whether external-dns's own endpoint.DomainFilter.Match matches
// it under filter (a negotiation body), from the test webhook server at url (its
// /domain-filter/match route).
func oracle(t *testing.T, url string, filter json.RawMessage, names []string) []bool {
	t.Helper()
	body, err := json.Marshal(map[string]any{"filter": filter, "names": names})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url+"/domain-filter/match", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []bool
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out) != len(names) {
		t.Fatalf("oracle of %s: HTTP %d, %v", filter, resp.StatusCode, err)
	}
	return out
}

// seed logs and returns a fresh random source for a property test.
func seed(t *testing.T) *rand.Rand {
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d", s)
	return rand.New(rand.NewPCG(s, s>>1))
}

// pick returns one of items.
func pick[T any](r *rand.Rand, items ...T) T { return items[r.IntN(len(items))] }

// genName is a name of 1 to 4 labels from a small alphabet (so that filters and names meet),
// in mixed case, with and without a trailing dot, with IDNA labels in both spellings.
func genName(r *rand.Rand) string {
	labels := make([]string, 1+r.IntN(4))
	for i := range labels {
		labels[i] = pick(r, "a", "b", "x", "ex", "example", "test", "sub", "www", "_tcp", "*",
			"web-1", "xn--mnchen-3ya", "münchen", "MÜNCHEN", "Example", "b-")
	}
	n := strings.Join(labels, ".")
	if r.IntN(4) == 0 {
		n += "."
	}
	if r.IntN(6) == 0 {
		n = strings.ToUpper(n)
	}
	return n
}

// genFilter is a negotiation body: name lists (items with and without a leading dot, spaces,
// empty items) or regular expressions over the same alphabet.
func genFilter(r *rand.Rand) json.RawMessage {
	w := map[string]any{}
	if r.IntN(3) == 0 {
		res := []string{`^a\.`, `(^|\.)x\.`, `münchen`, `example\.test$`, `sub`, `^[a-z]+\.b\.`, `^xn--`, `TEST`, `(?i)test`, `\.$`}
		if r.IntN(3) != 0 {
			w["regexInclude"] = pick(r, res...)
		}
		if r.IntN(3) != 0 {
			w["regexExclude"] = pick(r, res...)
		}
		b, _ := json.Marshal(w)
		return b
	}
	items := func() []string {
		out := make([]string, r.IntN(4))
		for i := range out {
			out[i] = genName(r)
			switch r.IntN(6) {
			case 0:
				out[i] = "." + out[i]
			case 1:
				out[i] = " " + out[i] + " "
			case 2:
				out[i] = ""
			}
		}
		return out
	}
	w["include"], w["exclude"] = items(), items()
	b, _ := json.Marshal(w)
	return b
}

// TestDomainFilter_MatchesAsExternalDNSDoes (property): for generated filters and names,
// DomainFilter.Match answers what external-dns's endpoint.DomainFilter.Match answers (the test
// server's oracle, external-dns v0.22.0's own code): include, exclude, leading dots, regexInclude
// and regexExclude, upper case, trailing dots and IDNA names alike.
func TestDomainFilter_MatchesAsExternalDNSDoes(t *testing.T) {
	url := startMemory(t, zoneName("oracle"))
	r := seed(t)
	for range 300 {
		body := genFilter(r)
		f, err := webhook.ParseDomainFilter(body)
		if err != nil {
			t.Fatalf("ParseDomainFilter(%s): %v", body, err)
		}
		names := make([]string, 30)
		for i := range names {
			names[i] = genName(r)
		}
		want := oracle(t, url, body, names)
		for i, n := range names {
			if got := f.Match(n); got != want[i] {
				t.Errorf("filter %s, name %q: Match = %v, external-dns's = %v", body, n, got, want[i])
			}
		}
	}
}

// TestDomainFilter_ExcludedNamesAreNeverListedOrWritten (property): for generated filters of a
// zone with exclusions (exclude names, or regexInclude and regexExclude), served by external-dns's
// webhook server over its in-memory provider (which itself stores any name), every generated name
// the filter excludes, as external-dns's own Match decides, is neither listed as the zone's (when
// it is in the webhook) nor written (a write of it is ErrInvalidChange and the webhook never gets
// it), and every name it keeps is listed and written.
func TestDomainFilter_ExcludedNamesAreNeverListedOrWritten(t *testing.T) {
	r := seed(t)
	for i := range 6 {
		zone := zoneName("excl")
		args := []string{"--zone", zone}
		if i%2 == 0 {
			var excl []string
			for range 1 + r.IntN(3) {
				excl = append(excl, pick(r, "", ".")+genLabels(r, 1+r.IntN(2))+"."+zone)
			}
			args = append(args, "--exclude-domains", strings.Join(excl, ","))
		} else {
			args = append(args, "--regex-include", `(^|\.)`+regexp.QuoteMeta(zone)+`$`,
				"--regex-exclude", pick(r, `^x\.`, `(^|\.)b\.`, `^a\.x\.`, `^_`, `^[ab]\.[ab]\.`))
		}
		url := webhooktest.Start(t, nil, args...)
		checkExclusions(t, r, url, zone)
	}
}

// genLabels is n labels of a small alphabet, joined.
func genLabels(r *rand.Rand, n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = pick(r, "a", "b", "x", "www", "_acme-challenge")
	}
	return strings.Join(labels, ".")
}

// checkExclusions seeds the webhook at url with half of a batch of generated names of zone (a
// POST /records of its own, as another writer of the webhook would), then checks the listing of
// the seeded names and a write of each of the others against external-dns's Match.
func checkExclusions(t *testing.T, r *rand.Rand, url, zone string) {
	t.Helper()
	names := map[string]bool{}
	for range 24 {
		names[genLabels(r, 1+r.IntN(3))+"."+zone] = true
	}
	all := slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	})
	filter := negotiation(t, url)
	kept := oracle(t, url, filter, all)
	seeded, fresh := all[:len(all)/2], all[len(all)/2:]
	var doc webhook.Changes
	for _, n := range seeded {
		doc.Create = append(doc.Create, webhook.Endpoint{DNSName: n, RecordType: "A", RecordTTL: 60, Targets: []string{"192.0.2.1"}})
	}
	post(t, url+"/records", doc)
	p := newProvider(t, url, webhook.Config{})
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range seeded {
		listed := slices.ContainsFunc(sets, func(rs provider.RecordSet) bool { return rs.Name == n })
		if listed != kept[i] {
			t.Errorf("filter %s: %s listed = %v, external-dns keeps it = %v", filter, n, listed, kept[i])
		}
	}
	for i, n := range fresh {
		rs := provider.RecordSet{Name: n, Type: "A", TTL: 60, Targets: []string{"192.0.2.2"}}
		err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
		keep := kept[len(seeded)+i]
		switch {
		case keep && err != nil:
			t.Errorf("filter %s: a write of %s, which it keeps: %v", filter, n, err)
		case !keep && !errors.Is(err, provider.ErrInvalidChange):
			t.Errorf("filter %s: a write of %s, which it excludes: %v, want ErrInvalidChange", filter, n, err)
		}
		if w := written(t, url, n); w != keep {
			t.Errorf("filter %s: %s written = %v, external-dns keeps it = %v", filter, n, w, keep)
		}
	}
}

// negotiation returns the webhook's GET / body.
func negotiation(t *testing.T, url string) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	getJSON(t, url+"/", &raw)
	return raw
}

// getJSON GETs url, accepting the webhook media type, and decodes its JSON body into v; a failed
// request or an undecodable body fails the test.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", webhook.MediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: HTTP %d: %v", url, resp.StatusCode, err)
	}
}

// post sends v as a webhook request body to url and wants 204.
func post(t *testing.T, url string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx(t), http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", webhook.MediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST %s: HTTP %d", url, resp.StatusCode)
	}
}
