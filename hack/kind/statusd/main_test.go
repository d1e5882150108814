package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(newHandler())
	t.Cleanup(srv.Close)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	for _, step := range []struct {
		method, path, body string
		wantCode           int
		wantBody           string
	}{
		{"GET", "/healthz", "", 200, "status 200"},
		{"GET", "/readyz", "", 200, "ok"},
		{"PUT", "/status", "503\n", 204, ""},
		{"GET", "/healthz", "", 503, "status 503"},
		{"GET", "/readyz", "", 200, "ok"},
		{"GET", "/status", "", 200, "503"},
		{"PUT", "/status", "600", 400, `want a status code from 100 to 599, got "600"`},
		{"PUT", "/status", "ok", 400, `want a status code from 100 to 599, got "ok"`},
		{"GET", "/healthz", "", 503, "status 503"},
		{"PUT", "/status", "200", 204, ""},
		{"GET", "/healthz", "", 200, "status 200"},
		{"POST", "/healthz", "", 405, "method not allowed"},
		{"GET", "/other", "", 404, "404 page not found"},
	} {
		code, body := do(step.method, step.path, step.body)
		if code != step.wantCode || body != step.wantBody {
			t.Fatalf("%s %s %q: %d %q, want %d %q", step.method, step.path, step.body, code, body, step.wantCode, step.wantBody)
		}
	}
}
