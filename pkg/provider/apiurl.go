package provider

import (
	"fmt"
	"net/url"
	"strings"
)

// ParseAPIURL parses raw, the value of the Secret key key, as the root URL of an HTTP API: an
// http or https URL with a host and without user info, query or fragment (credentials travel
// in headers, where they are never logged). example is shown in the error. Errors wrap
// ErrInvalidCredentials and name the key, never the value.
func ParseAPIURL(key, raw, example string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: %s must be an http(s) URL such as %s", ErrInvalidCredentials, key, example)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: %s must not carry user info, a query or a fragment", ErrInvalidCredentials, key)
	}
	return u, nil
}
