package main

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/internal/version"
)

// TestImages_BuildTheSameBinary: the Dockerfile users build and the
// FROM-scratch Containerfile.scratch built here (from `make build`'s binary) hold the same binary,
// user and entrypoint: the Dockerfile's go build and the Makefile's use the same CGO_ENABLED=0,
// -trimpath and -ldflags (stripped, -X of internal/version's Version and Revision from the
// VERSION and REVISION build inputs), and both images end with USER 65532:65532 and ENTRYPOINT
// ["/manager"]. hack/image-check.sh checks the built image itself.
func TestImages_BuildTheSameBinary(t *testing.T) {
	pkg := reflect.TypeOf(version.Info{}).PkgPath()
	wantLDFlags := "-s -w -X " + pkg + ".Version=${VERSION} -X " + pkg + ".Revision=${REVISION}"

	docker := read(t, "Dockerfile")
	build := regexp.MustCompile(`(?s)RUN (CGO_ENABLED=0 GOOS=linux go build -trimpath .*?-ldflags="([^"]*)".*?)\n\n`).FindStringSubmatch(docker)
	if build == nil {
		t.Fatal(`Dockerfile: no "RUN CGO_ENABLED=0 GOOS=linux go build -trimpath ... -ldflags="..."" step`)
	}
	if build[2] != wantLDFlags {
		t.Errorf("Dockerfile -ldflags = %q, want %q", build[2], wantLDFlags)
	}

	mk := read(t, "Makefile")
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(VERSION_PKG|GO_LDFLAGS) := (.*)$`).FindAllStringSubmatch(mk, -1) {
		vars[m[1]] = m[2]
	}
	if vars["VERSION_PKG"] != pkg {
		t.Errorf("Makefile VERSION_PKG = %q, want %q", vars["VERSION_PKG"], pkg)
	}
	got := strings.NewReplacer("$(VERSION_PKG)", vars["VERSION_PKG"], "$(VERSION)", "${VERSION}", "$(REVISION)", "${REVISION}").Replace(vars["GO_LDFLAGS"])
	if got != wantLDFlags {
		t.Errorf("Makefile GO_LDFLAGS = %q (%q after substitution), want the Dockerfile's %q", vars["GO_LDFLAGS"], got, wantLDFlags)
	}
	if !strings.Contains(mk, "\tCGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager .\n") {
		t.Error("Makefile build: want `CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager .`")
	}

	scratch := read(t, "Containerfile.scratch")
	for name, text := range map[string]string{"Dockerfile": docker, "Containerfile.scratch": scratch} {
		if got := lastLine(text, "USER "); got != "USER 65532:65532" {
			t.Errorf("%s: last USER is %q, want USER 65532:65532", name, got)
		}
		if got := lastLine(text, "ENTRYPOINT "); got != `ENTRYPOINT ["/manager"]` {
			t.Errorf(`%s: last ENTRYPOINT is %q, want ENTRYPOINT ["/manager"]`, name, got)
		}
	}
	if got := lastLine(docker, "FROM "); got != "FROM gcr.io/distroless/static:nonroot" {
		t.Errorf("Dockerfile: final base %q, want distroless/static:nonroot", got)
	}
	if got := lastLine(scratch, "FROM "); got != "FROM scratch" {
		t.Errorf("Containerfile.scratch: base %q, want scratch", got)
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lastLine returns the last line of text that starts with prefix, or "".
func lastLine(text, prefix string) string {
	var last string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			last = strings.TrimSpace(l)
		}
	}
	return last
}
