package app

import "testing"

// TestMetricsOptions: a loopback --metrics-bind-address serves plain HTTP with
// no token whatever --metrics-secure says; any other host serves HTTPS behind the
// authentication and authorisation filter unless --metrics-secure=false.
func TestMetricsOptions(t *testing.T) {
	cases := []struct {
		addr       string
		secure     bool
		wantSecure bool
	}{
		{":8443", true, true},
		{"0.0.0.0:8443", true, true},
		{"[::]:8443", true, true},
		{"10.1.2.3:8443", true, true},
		{":8443", false, false},
		{"127.0.0.1:8080", true, false},
		{"127.0.0.9:8080", true, false},
		{"[::1]:8080", true, false},
		{"localhost:8080", true, false},
		{"0", true, false},
	}
	for _, c := range cases {
		o := metricsOptions(c.addr, c.secure)
		if o.BindAddress != c.addr || o.SecureServing != c.wantSecure || (o.FilterProvider != nil) != c.wantSecure {
			t.Errorf("metricsOptions(%q, %v) = bind %q secure %v filter %v, want secure and filter %v",
				c.addr, c.secure, o.BindAddress, o.SecureServing, o.FilterProvider != nil, c.wantSecure)
		}
	}
}

// TestNew_WatchNamespacesNeedsOwnerID: namespaced mode cannot read kube-system's UID.
func TestNew_WatchNamespacesNeedsOwnerID(t *testing.T) {
	_, err := New(t.Context(), Config{WatchNamespaces: []string{"a"}})
	if err == nil || err.Error() != "--watch-namespaces needs --owner-id: the default owner ID is the UID of the kube-system namespace, which a manager limited to namespaces may not read" {
		t.Fatalf("New = %v, want the --owner-id error", err)
	}
}
