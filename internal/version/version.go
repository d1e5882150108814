package version

import (
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// The values a binary reports when the linker did not set them (go build, go test): a
// semver-shaped version that sorts before every release, and an unknown revision.
const (
	DefaultVersion  = "v0.0.0-dev"
	DefaultRevision = "unknown"
)

// Version and Revision are set at link time only, with -ldflags -X (see the package doc); nothing
// assigns them at run time. They are variables because -X can set nothing else: the one exception
// to "no package-level mutable state", read through Get.
var (
	// Version is the release version, e.g. "v0.3.1" or "v0.3.1-4-g1a2b3c4-dirty" (git describe).
	Version = DefaultVersion
	// Revision is the short git commit hash the binary was built from, e.g. "1a2b3c4".
	Revision = DefaultRevision
)

// Info is a binary's build identity.
type Info struct {
	// Version is the release version (git describe), Revision the short commit hash.
	Version, Revision string
	// GoVersion is the Go toolchain that built the binary (runtime.Version), e.g. "go1.26.8".
	GoVersion string
}

// Get returns this binary's Info; an empty linker value reads as the default.
func Get() Info {
	i := Info{Version: Version, Revision: Revision, GoVersion: runtime.Version()}
	if i.Version == "" {
		i.Version = DefaultVersion
	}
	if i.Revision == "" {
		i.Revision = DefaultRevision
	}
	return i
}

// String is the line `manager --version` prints: "dnsplane <version> (revision <rev>, <goversion>)",
// e.g. "dnsplane v0.3.1 (revision 1a2b3c4, go1.26.8)".
func (i Info) String() string {
	return fmt.Sprintf("dnsplane %s (revision %s, %s)", i.Version, i.Revision, i.GoVersion)
}

// Metrics holds dnsplane_build_info.
type Metrics struct {
	// BuildInfo is dnsplane_build_info{version,revision,goversion}: one series, value 1, whose
	// labels are the binary's Info (the Prometheus "info metric" convention, as go_build_info).
	BuildInfo *prometheus.GaugeVec
}

// NewMetrics builds dnsplane_build_info for Get() and registers it with reg (nil = unexported).
// Errors: a second registration on one registry (a prometheus.AlreadyRegisteredError, wrapped).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	return newMetrics(reg, Get())
}

func newMetrics(reg prometheus.Registerer, i Info) (*Metrics, error) {
	m := &Metrics{BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dnsplane_build_info",
		Help: "The manager's build: version (git describe), revision (short commit) and goversion labels; always 1.",
	}, []string{"version", "revision", "goversion"})}
	m.BuildInfo.WithLabelValues(i.Version, i.Revision, i.GoVersion).Set(1)
	return promreg.Registered(reg, "version", m, m.BuildInfo)
}
