package provider

import (
	"errors"
	"strings"
	"testing"
)

func TestParseAPIURL(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want string // "" = accepted; else a fragment of the error
	}{
		{"http://127.0.0.1:8081", ""},
		{" https://pdns.dns.svc:8081/ ", ""},
		{"127.0.0.1 8081", "must be an http(s) URL such as http://example"},
		{"ftp://host", "must be an http(s) URL"},
		{"http://", "must be an http(s) URL"},
		{"http://user:s3cret@host", "must not carry user info"},
		{"http://host/?key=s3cret", "must not carry user info"},
		{"http://host/#frag", "must not carry user info"},
	} {
		u, err := ParseAPIURL("KEY", tc.raw, "http://example")
		switch {
		case tc.want == "" && (err != nil || u == nil):
			t.Errorf("%q: %v, want accepted", tc.raw, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalidCredentials) || !strings.Contains(err.Error(), "KEY "+tc.want)):
			t.Errorf("%q: %v, want ErrInvalidCredentials with %q", tc.raw, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%q: the error shows the value: %v", tc.raw, err)
		}
	}
}
