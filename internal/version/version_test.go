package version

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestInfoString_IsTheVersionLine(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{"v0.3.1", "1a2b3c4", "go1.26.8"}, "dnsplane v0.3.1 (revision 1a2b3c4, go1.26.8)"},
		{Info{"v0.0.0-42-g1a2b3c4-dirty", "1a2b3c4", "go1.26.8"}, "dnsplane v0.0.0-42-g1a2b3c4-dirty (revision 1a2b3c4, go1.26.8)"},
		{Info{DefaultVersion, DefaultRevision, "go1.26.8"}, "dnsplane v0.0.0-dev (revision unknown, go1.26.8)"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestGet_UnstampedBinaryReportsTheDefaults: `go test` links without -X, so Get reports the
// defaults and the running toolchain.
func TestGet_UnstampedBinaryReportsTheDefaults(t *testing.T) {
	want := Info{Version: DefaultVersion, Revision: DefaultRevision, GoVersion: runtime.Version()}
	if got := Get(); got != want {
		t.Errorf("Get() = %+v, want %+v", got, want)
	}
}

// TestNewMetrics_BuildInfoCarriesTheLabels: one dnsplane_build_info series,
// value 1, labelled with the binary's version, revision and goversion; a second registration on
// one registry is an error.
func TestNewMetrics_BuildInfoCarriesTheLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newMetrics(reg, Info{"v1.2.3-4-gabcdef0", "abcdef0", "go1.26.8"}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP dnsplane_build_info The manager's build: version (git describe), revision (short commit) and goversion labels; always 1.
# TYPE dnsplane_build_info gauge
dnsplane_build_info{goversion="go1.26.8",revision="abcdef0",version="v1.2.3-4-gabcdef0"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "dnsplane_build_info"); err != nil {
		t.Error(err)
	}
	var dup prometheus.AlreadyRegisteredError
	if _, err := NewMetrics(reg); !errors.As(err, &dup) {
		t.Errorf("second NewMetrics on one registry: %v, want an AlreadyRegisteredError", err)
	}
}

func TestNewMetrics_NilRegistererIsUnexported(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.BuildInfo.WithLabelValues(DefaultVersion, DefaultRevision, runtime.Version())); got != 1 {
		t.Errorf("dnsplane_build_info for this binary = %v, want 1", got)
	}
}
