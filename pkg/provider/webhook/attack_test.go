package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/providertest"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// bearerToken is the credential part of an Authorization header value, which a webhook or its
// proxy may echo without the scheme in front of it.
const bearerToken = "eyJhbGciOi.s3cr3t-bearer-token.xyz"

// TestErrors_AnEchoedCredentialNeverShows: a webhook that echoes a configured header value in an
// error body, in part (the token without its "Bearer " scheme), across the 512-byte cut of the
// error text, or JSON-escaped, never gets it into the error, which becomes a status condition
// and an Event; nor does a negotiation whose Content-Type or regular expression carries it.
func TestErrors_AnEchoedCredentialNeverShows(t *testing.T) {
	zone := zoneName("echo")
	h := newHostile(t, startMemory(t, zone))
	const ampKey = "k3y<with>&html-chars"
	p := newProvider(t, h.url, webhook.Config{
		Headers:      http.Header{"Authorization": {"Bearer " + bearerToken}, "X-Api-Key": {apiKey, ampKey}},
		FilterMaxAge: -1, AdjustCacheSize: -1,
	})
	rs := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	write := func() error {
		return p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}
	media := http.Header{"Content-Type": {webhook.MediaType}}
	filter := `{"include":["` + zone + `"]}`
	cases := []struct {
		name, method, path string
		code               int
		header             http.Header
		body               string
	}{
		{"token without its scheme", http.MethodPost, "/records", 401, nil, "invalid token " + bearerToken},
		{"token in a JSON error", http.MethodPost, "/records", 400, nil, `{"error":"token ` + bearerToken + ` expired"}`},
		{"key across the cut", http.MethodPost, "/records", 400, nil, strings.Repeat("x", 490) + " " + apiKey},
		{"key JSON-escaped", http.MethodPost, "/records", 400, nil, `{"request":{"x-api-key":"k3y\u003cwith\u003e\u0026html-chars"}}`},
		{"key in the negotiation's Content-Type", http.MethodGet, "/", 200, http.Header{"Content-Type": {"text/plain; echo=" + apiKey}}, filter},
		{"key in the negotiation's regex", http.MethodGet, "/", 200, media, `{"regexInclude":"(` + apiKey + `"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.reset()
			h.answer(c.method, c.path, c.code, c.header, c.body)
			err := write()
			if err == nil {
				t.Fatal("the write succeeded")
			}
			for _, secret := range []string{bearerToken, apiKey, ampKey, apiKey[:12], bearerToken[:12], `k3y\u003cwith`} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows (part of) a configured header value %q: %v", secret, err)
				}
			}
		})
	}
}

// TestApplyChanges_A101AnswerDoesNotHang: a webhook (or a proxy in front of it) that answers POST
// /records with 101 Switching Protocols and then holds the connection open: the write ends with
// an error within Config.Timeout, as every other request does, instead of waiting on the
// connection for ever (and holding the provider's only write slot).
func TestApplyChanges_A101AnswerDoesNotHang(t *testing.T) {
	zone := zoneName("upgrade")
	h := newHostile(t, startMemory(t, zone))
	held := make(chan net.Conn, 1)
	t.Cleanup(func() {
		select {
		case c := <-held:
			_ = c.Close()
		default:
		}
	})
	h.mu.Lock()
	h.rules["POST /records"] = func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: chaos\r\nConnection: Upgrade\r\n\r\n")
		_ = buf.Flush()
		held <- conn
	}
	h.mu.Unlock()
	p := newProvider(t, h.url, webhook.Config{Timeout: time.Second})
	rs := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	done := make(chan error, 1)
	go func() {
		done <- p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "101") && !errors.Is(err, errors.ErrUnsupported) && !strings.Contains(err.Error(), "deadline") {
			t.Fatalf("POST /records answered 101: %v, want an error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("POST /records answered 101 and held open: ApplyChanges has not returned after 30 s (Timeout is 1 s)")
	}
}

// TestListRecordSets_AnExcludedNameIsNotListedUnderAnotherSpelling: a webhook that lists a name
// its own domain filter excludes, spelled so that the filter's rule does not see it as that
// name (spaces around it, which the canonical form trims), never gets it listed: the name is
// matched as listed and as dnsplane reads it.
func TestListRecordSets_AnExcludedNameIsNotListedUnderAnotherSpelling(t *testing.T) {
	zone := zoneName("spell")
	h := newHostile(t, startMemory(t, zone))
	media := http.Header{"Content-Type": {webhook.MediaType}}
	h.answer(http.MethodGet, "/", 200, media, `{"include":["`+zone+`"],"exclude":["secret.`+zone+`"]}`)
	h.answer(http.MethodGet, "/records", 200, media, `[
		{"dnsName":"secret.`+zone+` ","targets":["192.0.2.1"],"recordType":"A"},
		{"dnsName":" Secret.`+zone+`.","targets":["192.0.2.2"],"recordType":"TXT"},
		{"dnsName":"www.`+zone+`","targets":["192.0.2.3"],"recordType":"A"}]`)
	p := newProvider(t, h.url, webhook.Config{FilterMaxAge: -1})
	sets, err := p.ListRecordSets(ctx(t), zone)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rs := range sets {
		names = append(names, rs.Key().String())
		if rs.Name == "secret."+zone {
			t.Errorf("listed %s, which the webhook's filter excludes", rs.Key())
		}
	}
	if len(sets) != 1 || sets[0].Name != "www."+zone {
		t.Errorf("listed %v, want www.%s alone", names, zone)
	}
}

// TestAdjustEndpoints_ATargetTheWebhookDropsIsNotCapable: a webhook whose /adjustendpoints
// answers a set with fewer (or other) targets than it was sent would not hold the set as given;
// the write is provider.ErrNotCapable, as for a set the answer leaves out, and nothing is
// written, instead of the webhook's version being written and the object reported Ready with a
// target that no one serves.
func TestAdjustEndpoints_ATargetTheWebhookDropsIsNotCapable(t *testing.T) {
	zone := zoneName("dropt")
	real := startMemory(t, zone)
	h := newHostile(t, real)
	media := http.Header{"Content-Type": {webhook.MediaType}}
	h.answer(http.MethodPost, "/adjustendpoints", 200, media,
		`[{"dnsName":"a.`+zone+`","targets":["192.0.2.1"],"recordType":"A","recordTTL":60}]`)
	p := newProvider(t, h.url, webhook.Config{})
	rs := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}}
	err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	if !errors.Is(err, provider.ErrNotCapable) {
		t.Errorf("the webhook's adjustment dropped 192.0.2.2: ApplyChanges = %v, want ErrNotCapable", err)
	}
	if written(t, real, rs.Name) {
		t.Errorf("%s was written without a target it was given", rs.Name)
	}
	// A respelling of the same targets (case, an IPv6 address's zeros) is no change.
	h.answer(http.MethodPost, "/adjustendpoints", 200, media,
		`[{"dnsName":"B.`+zone+`.","targets":["2001:DB8:0:0::1"],"recordType":"AAAA","recordTTL":300}]`)
	rs6 := provider.RecordSet{Name: "b." + zone, Type: "AAAA", TTL: 60, Targets: []string{"2001:db8::1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs6}}); err != nil {
		t.Errorf("the webhook respelled the target and raised the TTL: %v", err)
	}
}

// TestApplyChanges_ANameTheWebhookJustExcludedIsNotWritten: a webhook whose domain filter comes
// to exclude a name (its operator protects it) gets no write of it, even while the provider
// reuses its last negotiation for reads (Config.FilterMaxAge): a write is checked against the
// filter the webhook answers just before it is sent.
func TestApplyChanges_ANameTheWebhookJustExcludedIsNotWritten(t *testing.T) {
	zone := zoneName("narrow")
	real := startMemory(t, zone)
	h := newHostile(t, real)
	media := http.Header{"Content-Type": {webhook.MediaType}}
	h.answer(http.MethodGet, "/", 200, media, `{"include":["`+zone+`"]}`)
	p := newProvider(t, h.url, webhook.Config{FilterMaxAge: time.Hour})
	a := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &a}}); err != nil {
		t.Fatal(err)
	}
	h.answer(http.MethodGet, "/", 200, media, `{"include":["`+zone+`"],"exclude":["protected.`+zone+`"]}`)
	b := provider.RecordSet{Name: "protected." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.2"}}
	err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &b}})
	if !errors.Is(err, provider.ErrInvalidChange) {
		t.Errorf("a write to a name the webhook now excludes: %v, want ErrInvalidChange", err)
	}
	if written(t, real, b.Name) {
		t.Errorf("%s was written after the webhook's filter came to exclude it", b.Name)
	}
}

// TestAdjustEndpoints_RememberedAnswersAreBoundedInBytes: a webhook whose /adjustendpoints pads
// every answer (a provider-specific option of 3 MiB) cannot make the provider hold
// Config.AdjustCacheSize such answers (4,096 of 3 MiB: 12 GiB): remembered answers are bounded
// in bytes too, so the first of four such answers is forgotten, and asked for again.
func TestAdjustEndpoints_RememberedAnswersAreBoundedInBytes(t *testing.T) {
	zone := zoneName("pad")
	pad := strings.Repeat("x", 3<<20)
	var adjusts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webhook.MediaType)
		switch r.Method + " " + r.URL.Path {
		case "GET /":
			_, _ = w.Write([]byte(`{"include":["` + zone + `"]}`))
		case "GET /records":
			_, _ = w.Write([]byte(`[]`))
		case "POST /records":
			w.WriteHeader(http.StatusNoContent)
		case "POST /adjustendpoints":
			adjusts.Add(1)
			var eps []webhook.Endpoint
			if err := json.NewDecoder(r.Body).Decode(&eps); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			for i := range eps {
				eps[i].ProviderSpecific = append(eps[i].ProviderSpecific, webhook.Property{Name: "webhook/pad", Value: pad})
			}
			_ = json.NewEncoder(w).Encode(eps)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, webhook.Config{})
	create := func(i int) {
		t.Helper()
		rs := provider.RecordSet{Name: "h" + string(rune('a'+i)) + "." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
		if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		create(i)
	}
	before := adjusts.Load()
	create(0)
	if adjusts.Load() == before {
		t.Errorf("four answers of 3 MiB each are all remembered: the adjustment cache is bounded by count only")
	}
}

// appender is a webhook in front of a per-record DNS API, as many third-party webhooks are: a
// create adds its targets to whatever the name holds (it is not idempotent), a delete removes
// the set. Its first POST /records (fail) applies the document and then answers 500, as a
// webhook whose backend timed out after committing does.
type appender struct {
	mu   sync.Mutex
	sets map[string]webhook.Endpoint // by name and type
	fail atomic.Int64                // POST /records still to answer 500 after applying
}

func (a *appender) serve(zone string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webhook.MediaType)
		a.mu.Lock()
		defer a.mu.Unlock()
		switch r.Method + " " + r.URL.Path {
		case "GET /":
			_, _ = w.Write([]byte(`{"include":["` + zone + `"]}`))
		case "GET /records":
			eps := []webhook.Endpoint{}
			for _, ep := range a.sets {
				eps = append(eps, ep)
			}
			_ = json.NewEncoder(w).Encode(eps)
		case "POST /adjustendpoints":
			var eps []webhook.Endpoint
			_ = json.NewDecoder(r.Body).Decode(&eps)
			_ = json.NewEncoder(w).Encode(eps)
		case "POST /records":
			var ch webhook.Changes
			if err := json.NewDecoder(r.Body).Decode(&ch); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			for _, ep := range append(ch.Delete, ch.UpdateOld...) {
				delete(a.sets, ep.DNSName+"/"+ep.RecordType)
			}
			for _, ep := range append(ch.Create, ch.UpdateNew...) {
				cur := a.sets[ep.DNSName+"/"+ep.RecordType]
				ep.Targets = append(cur.Targets, ep.Targets...)
				a.sets[ep.DNSName+"/"+ep.RecordType] = ep
			}
			if a.fail.Add(-1) >= 0 {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte("backend timeout"))
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// TestApplyChanges_ARetryAfterA5xxDoesNotApplyTheWriteTwice: a POST /records answered 500 may
// have been applied; the guard retries it, and the retry must not apply it a second time on a
// webhook whose create is not idempotent. The retry reads the zone first and leaves out what it
// finds done, so the set holds its one target once, and the write succeeds.
func TestApplyChanges_ARetryAfterA5xxDoesNotApplyTheWriteTwice(t *testing.T) {
	zone := zoneName("twice")
	a := &appender{sets: map[string]webhook.Endpoint{}}
	a.fail.Store(1)
	srv := httptest.NewServer(a.serve(zone))
	t.Cleanup(srv.Close)
	p := providertest.Guarded(newProvider(t, srv.URL, webhook.Config{}))
	rs := provider.RecordSet{Name: "www." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil {
		t.Fatalf("the write, applied and answered 500, then retried: %v", err)
	}
	a.mu.Lock()
	got := a.sets[rs.Name+"/A"].Targets
	a.mu.Unlock()
	if len(got) != 1 {
		t.Errorf("the webhook holds %s A %v: the write was applied again by the retry", rs.Name, got)
	}
}

// TestListRecordSets_EmptyEndpointsCostNoMemory: a GET /records answer of empty endpoints
// ("[{},{},...]", 3 bytes each) is no zone's records, and is not held as such. Held, each 3
// bytes became an Endpoint struct in one growing slice, over 200 times the answer's size in
// all (a 32 MiB answer, the protocol's cap: gigabytes, most of it live at once); decoded one
// endpoint at a time and dropped, the allocations stay under 64 times its size, each
// short-lived.
func TestListRecordSets_EmptyEndpointsCostNoMemory(t *testing.T) {
	zone := zoneName("bomb")
	var b bytes.Buffer
	b.WriteString(`[{"dnsName":"www.` + zone + `","recordType":"A","targets":["192.0.2.1"]}`)
	for b.Len() < 4<<20 {
		b.WriteString(`,{}`)
	}
	b.WriteString(`]`)
	body := b.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", webhook.MediaType)
		if r.URL.Path == "/" {
			_, _ = w.Write([]byte(`{"include":["` + zone + `"]}`))
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	p := newProvider(t, srv.URL, webhook.Config{})
	if _, err := p.ListZones(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	sets, err := p.ListRecordSets(ctx(t), zone)
	runtime.ReadMemStats(&after)
	if err != nil || len(sets) != 1 {
		t.Fatalf("ListRecordSets = %d sets, %v; want www alone", len(sets), err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64*uint64(len(body)) {
		t.Errorf("reading a %d-byte answer of empty endpoints allocated %d bytes, over 64 times its size", len(body), got)
	}
}
