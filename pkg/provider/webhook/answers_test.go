package webhook_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// apiKey is the credential the tests of this file configure as a header, and look for where it
// must not be.
const apiKey = "k3y-0f-the-webhook-api"

// hostile is a proxy to a webhook server that answers chosen requests itself ("METHOD /path" to
// a handler) and passes the others on.
type hostile struct {
	url   string
	mu    sync.Mutex
	rules map[string]http.HandlerFunc
}

func newHostile(t *testing.T, target string) *hostile {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{rules: map[string]http.HandlerFunc{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		rule := h.rules[r.Method+" "+r.URL.Path]
		h.mu.Unlock()
		if rule == nil {
			proxy.ServeHTTP(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		rule(w, r)
	}))
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// answer makes the proxy answer method path with code, headers and body; a nil rule passes it on.
func (h *hostile) answer(method, path string, code int, header http.Header, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rules[method+" "+path] = func(w http.ResponseWriter, _ *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func (h *hostile) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rules = map[string]http.HandlerFunc{}
}

// elsewhere is another host (localhost, not 127.0.0.1) that answers every request as a webhook
// would answer a read, with 200 and the protocol's media type, and records what it was sent.
type elsewhere struct {
	url  string
	mu   sync.Mutex
	seen []http.Header
}

func newElsewhere(t *testing.T) *elsewhere {
	t.Helper()
	e := &elsewhere{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Header.Clone())
		e.mu.Unlock()
		w.Header().Set("Content-Type", webhook.MediaType)
		if r.URL.Path == "/" {
			_, _ = io.WriteString(w, `{}`)
			return
		}
		_, _ = io.WriteString(w, `[]`)
	}))
	t.Cleanup(srv.Close)
	e.url = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	return e
}

func (e *elsewhere) requests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seen)
}

// written reports whether the webhook server at url (read directly, not through a proxy) holds
// an endpoint named name.
func written(t *testing.T, url, name string) bool {
	t.Helper()
	var eps []webhook.Endpoint
	getJSON(t, url+"/records", &eps)
	for _, ep := range eps {
		if dnswire.Dotless(ep.DNSName) == dnswire.Dotless(name) {
			return true
		}
	}
	return false
}

// TestApplyChanges_OnlyA204FromTheWebhookIsAWrite: external-dns's client takes a write as done
// only when POST /records answers 204. A redirect (302, which an HTTP client turns into a GET
// whose 200 looks like success, or 307), and a 200 (an authenticating proxy's login page), are
// errors naming the status; the redirect is not followed, so the API key never reaches the other
// host; the error never shows the key; and nothing was written.
func TestApplyChanges_OnlyA204FromTheWebhookIsAWrite(t *testing.T) {
	zone := zoneName("ack")
	real := startMemory(t, zone)
	h := newHostile(t, real)
	other := newElsewhere(t)
	p := newProvider(t, h.url, webhook.Config{Headers: http.Header{"X-Api-Key": {apiKey}}})
	cases := []struct {
		name   string
		code   int
		header http.Header
		body   string
	}{
		{"302 to a login page elsewhere", http.StatusFound, http.Header{"Location": {other.url + "/login?next=/records"}}, ""},
		{"307 elsewhere", http.StatusTemporaryRedirect, http.Header{"Location": {other.url + "/records"}}, ""},
		{"302 on the same host", http.StatusFound, http.Header{"Location": {"/"}}, ""},
		{"200 login page", http.StatusOK, http.Header{"Content-Type": {"text/html"}}, "<html><form action=/login>Sign in</form></html>"},
		{"201", http.StatusCreated, nil, "{}"},
		{"202", http.StatusAccepted, nil, ""},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.answer(http.MethodPost, "/records", c.code, c.header, c.body)
			rs := provider.RecordSet{Name: "w" + string(rune('a'+i)) + "." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
			err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
			if err == nil {
				t.Fatalf("POST /records answered %d: ApplyChanges succeeded", c.code)
			}
			if !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(c.code)) || !strings.Contains(err.Error(), "204") {
				t.Errorf("error %q does not name the status %d and the 204 the protocol requires", err, c.code)
			}
			if strings.Contains(err.Error(), apiKey) || strings.Contains(err.Error(), "login?next") {
				t.Errorf("error %q shows a header value", err)
			}
			if provider.Unreachable(err) {
				t.Errorf("error %q is Unreachable: a webhook that answered is not down", err)
			}
			if written(t, real, rs.Name) {
				t.Errorf("%s was written", rs.Name)
			}
		})
	}
	if n := other.requests(); n != 0 {
		t.Errorf("the redirect was followed: the other host got %d requests (headers %v)", n, other.seen)
	}
	h.reset()
	rs := provider.RecordSet{Name: "ok." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	if err := p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}}); err != nil || !written(t, real, rs.Name) {
		t.Fatalf("a write answered 204: %v, written %v", err, written(t, real, rs.Name))
	}
}

// TestReads_AnswerAsExternalDNSRequires: GET / must answer 2xx, GET /records and POST
// /adjustendpoints 200 (external-dns's client); a redirect of any of them is not followed (the
// other host gets nothing, the API key included) and is an error naming the status.
func TestReads_AnswerAsExternalDNSRequires(t *testing.T) {
	zone := zoneName("reads")
	h := newHostile(t, startMemory(t, zone))
	other := newElsewhere(t)
	p := newProvider(t, h.url, webhook.Config{Headers: http.Header{"X-Api-Key": {apiKey}}, FilterMaxAge: -1, AdjustCacheSize: -1})
	redirect := http.Header{"Location": {other.url + "/records"}}
	media := http.Header{"Content-Type": {webhook.MediaType}}
	rs := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	write := func() error {
		return p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}
	list := func() error { _, err := p.ListRecordSets(ctx(t), zone); return err }
	cases := []struct {
		name, method, path string
		code               int
		header             http.Header
		body               string
		call               func() error
	}{
		{"GET / 302", http.MethodGet, "/", http.StatusFound, redirect, "", list},
		{"GET / 308", http.MethodGet, "/", http.StatusPermanentRedirect, redirect, "", list},
		{"GET /records 302", http.MethodGet, "/records", http.StatusFound, redirect, "", list},
		{"GET /records 203", http.MethodGet, "/records", http.StatusNonAuthoritativeInfo, media, "[]", list},
		{"GET /records 204", http.MethodGet, "/records", http.StatusNoContent, media, "", list},
		{"POST /adjustendpoints 307", http.MethodPost, "/adjustendpoints", http.StatusTemporaryRedirect, redirect, "", write},
		{"POST /adjustendpoints 201", http.MethodPost, "/adjustendpoints", http.StatusCreated, media, "[]", write},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.reset()
			h.answer(c.method, c.path, c.code, c.header, c.body)
			err := c.call()
			if err == nil || !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(c.code)) {
				t.Fatalf("%s answered %d: %v, want an error naming the status", c.path, c.code, err)
			}
			if strings.Contains(err.Error(), apiKey) {
				t.Errorf("error %q shows a header value", err)
			}
		})
	}
	if n := other.requests(); n != 0 {
		t.Errorf("a redirect was followed: the other host got %d requests (headers %v)", n, other.seen)
	}
	// A negotiation answers any 2xx, as external-dns's client takes it.
	h.reset()
	h.answer(http.MethodGet, "/", http.StatusAccepted, media, `{"include":["`+zone+`"]}`)
	if err := list(); err != nil {
		t.Fatalf("GET / answered 202 with a filter: %v", err)
	}
}

// TestErrors_RetryableStatusesAreExternalDNSs: external-dns's client retries a read or a write
// answered 500 to 510 (isRetryableError) and no status above; dnsplane's ErrUnavailable, which
// the guard retries, covers the same statuses. The negotiation retries every 5xx, as external-dns's
// requestWithRetry does.
func TestErrors_RetryableStatusesAreExternalDNSs(t *testing.T) {
	zone := zoneName("retry")
	h := newHostile(t, startMemory(t, zone))
	p := newProvider(t, h.url, webhook.Config{FilterMaxAge: -1, AdjustCacheSize: -1})
	rs := provider.RecordSet{Name: "a." + zone, Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}
	write := func() error {
		return p.ApplyChanges(ctx(t), zone, []provider.Change{{Action: provider.ActionCreate, After: &rs}})
	}
	list := func() error { _, err := p.ListRecordSets(ctx(t), zone); return err }
	cases := []struct {
		method, path string
		code         int
		call         func() error
		retryable    bool
	}{
		{http.MethodPost, "/records", 500, write, true},
		{http.MethodPost, "/records", 510, write, true},
		{http.MethodPost, "/records", 511, write, false},
		{http.MethodPost, "/records", 599, write, false},
		{http.MethodGet, "/records", 510, list, true},
		{http.MethodGet, "/records", 511, list, false},
		{http.MethodPost, "/adjustendpoints", 502, write, true},
		{http.MethodPost, "/adjustendpoints", 520, write, false},
		{http.MethodGet, "/", 511, list, true},
		{http.MethodGet, "/", 599, list, true},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path+" "+strconv.Itoa(c.code), func(t *testing.T) {
			h.reset()
			h.answer(c.method, c.path, c.code, nil, "failed")
			err := c.call()
			if err == nil || !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(c.code)) {
				t.Fatalf("answered %d: %v, want an error naming the status", c.code, err)
			}
			if got := errors.Is(err, provider.ErrUnavailable); got != c.retryable {
				t.Errorf("%s %s answered %d: ErrUnavailable = %v, want %v (%v)", c.method, c.path, c.code, got, c.retryable, err)
			}
			if got := provider.Unreachable(err); got != c.retryable {
				t.Errorf("%s %s answered %d: Unreachable = %v, want %v", c.method, c.path, c.code, got, c.retryable)
			}
		})
	}
}
