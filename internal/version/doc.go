// Package version owns the manager's build identity: the release version and the git revision
// stamped at build time, the one-line form that `manager --version` prints, and the
// dnsplane_build_info gauge that carries them on /metrics.
//
// The values come from the linker, not from Go's own VCS stamp (this project's machines build with
// GOFLAGS=-buildvcs=false): `make build`, `make image` and the Dockerfile pass
//
//	-ldflags "-X github.com/dnsplane/dnsplane/internal/version.Version=$(VERSION)
//	          -X github.com/dnsplane/dnsplane/internal/version.Revision=$(REVISION)"
//
// where the Makefile derives VERSION from `git describe --tags --match 'v[0-9]*' --dirty --always`
// and REVISION from `git rev-parse --short HEAD` (docs/image.md, "Versions"). A binary built any
// other way (go build, go test) reports DefaultVersion and DefaultRevision.
//
// It owns no flags (internal/app's Main parses --version) and no registry: NewMetrics registers on the one it
// is given, as every dnsplane package does (pkg/promreg).
package version
