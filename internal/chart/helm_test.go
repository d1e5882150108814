package chart

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	repoRoot    = "../.."
	chartDir    = repoRoot + "/charts/dnsplane"
	releaseNS   = "dnsplane-system"
	releaseName = "dnsplane"
)

// helmBin returns bin/helm's path, or skips the test when it is missing (make helm builds it).
func helmBin(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("bin/helm is missing (run make helm, or hack/helm.sh): %v", err)
	}
	return p
}

// helm runs bin/helm with args and returns its standard output; a non-zero exit fails the test
// with its standard error.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// helmErr runs bin/helm with args, with a 2-minute timeout; the error carries standard error.
func helmErr(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin(t), args...)
	// Keep helm away from the user's repositories, plugins and caches.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), errors.Join(err, errors.New(strings.TrimSpace(stderr.String())))
	}
	return stdout.Bytes(), nil
}

// render runs helm template for release dnsplane in dnsplane-system with the --set values sets
// (key=value each) and returns every rendered object.
func render(t *testing.T, sets ...string) []*unstructured.Unstructured {
	t.Helper()
	return renderIn(t, releaseName, releaseNS, sets...)
}

// renderIn is render with the release name and namespace given; a set "@file" is a values file.
func renderIn(t *testing.T, name, ns string, sets ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", name, chartDir, "--namespace", ns}
	for _, s := range sets {
		if f, ok := strings.CutPrefix(s, "@"); ok {
			args = append(args, "--values", f)
			continue
		}
		args = append(args, "--set", s)
	}
	objs, err := decodeAll(helm(t, args...))
	if err != nil {
		t.Fatalf("decode helm template output: %v", err)
	}
	return objs
}

// decodeAll decodes a multi-document YAML stream into objects, skipping empty documents.
func decodeAll(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// namespacedSets are the values of namespaced mode that the tests render.
var namespacedSets = []string{"namespaced=true", "ownerID=cluster-a", "watchNamespaces={team-a,team-b}"}

func TestHelmLint(t *testing.T) {
	for name, sets := range map[string][]string{"default": nil, "namespaced": namespacedSets} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			for _, s := range sets {
				args = append(args, "--set", s)
			}
			out := helm(t, args...)
			if !bytes.Contains(out, []byte("0 chart(s) failed")) {
				t.Fatalf("helm lint:\n%s", out)
			}
		})
	}
}

// TestHelmRefusesBadValues: the values the chart cannot run with fail at render time, each with
// a message naming the value (values.schema.json or a template's fail).
func TestHelmRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		sets []string
		want string
	}{
		{[]string{"namespaced=true"}, "ownerID"},
		{[]string{"dns.service.type=ExternalName"}, "/dns/service/type"},
		{[]string{"replicaCount=2", "leaderElection.enabled=false"}, "leaderElection.enabled"},
		{[]string{"gslb.peers[0].geoTag=eu"}, "address"},
		{[]string{"extraArgs={zone-resync-interval=1h}"}, "extraArgs"},
		{[]string{"unknownValue=1"}, "unknownValue"},
		{[]string{"metrics.reader.serviceAccount.name=p", "metrics.secure=false"}, "metrics.reader.serviceAccount.name"},
		{[]string{"metrics.reader.serviceAccount.name=p", "metrics.bindAddress=0"}, "metrics.reader.serviceAccount.name"},
		{[]string{"metrics.reader.serviceAccount.name=p", "namespaced=true", "ownerID=a"}, "metrics.reader.serviceAccount.name"},
		{[]string{"metrics.reader.serviceAccount.nam=p"}, "nam"},
		{[]string{"webhook.sidecars[0].name=manager", "webhook.sidecars[0].image=x"}, "/webhook/sidecars/0/name"},
		{[]string{"webhook.sidecars[0].name=hook"}, "image"},
	} {
		args := []string{"template", releaseName, chartDir}
		for _, s := range tc.sets {
			args = append(args, "--set", s)
		}
		_, err := helmErr(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("helm template --set %v: error %v, want one naming %q", tc.sets, err, tc.want)
		}
	}
}

// TestChartFilesAreConfigs: the CRDs and RBAC rules the chart renders are config/'s, byte for
// byte, as make manifests copies them; the chart writes none of its own.
func TestChartFilesAreConfigs(t *testing.T) {
	for src, dst := range map[string]string{
		"config/crd/bases/*.yaml": "charts/dnsplane/files/crds",
		"config/rbac/*role.yaml":  "charts/dnsplane/files/rbac",
	} {
		want, err := filepath.Glob(filepath.Join(repoRoot, src))
		if err != nil || len(want) == 0 {
			t.Fatalf("glob %s: %v %v", src, want, err)
		}
		got, err := filepath.Glob(filepath.Join(repoRoot, dst, "*"))
		if err != nil {
			t.Fatal(err)
		}
		base := func(ps []string) []string {
			out := make([]string, len(ps))
			for i, p := range ps {
				out[i] = filepath.Base(p)
			}
			slices.Sort(out)
			return out
		}
		if !slices.Equal(base(want), base(got)) {
			t.Errorf("%s holds %v, want %v (run make manifests)", dst, base(got), base(want))
			continue
		}
		for _, p := range want {
			a, errA := os.ReadFile(p)
			b, errB := os.ReadFile(filepath.Join(repoRoot, dst, filepath.Base(p)))
			if err := errors.Join(errA, errB); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("%s/%s differs from %s (run make manifests)", dst, filepath.Base(p), p)
			}
		}
	}
}

// TestMakeChartFollowsVERSION: make chart packages the chart with the build's identity, so that
// helm history tells releases apart and the default image tag is the one make image builds: the
// package's version is make version without its v, and its appVersion is make version.
func TestMakeChartFollowsVERSION(t *testing.T) {
	helmBin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	makeS := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, "make", append([]string{"-s", "-C", repoRoot}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := makeS("version")
	dir := t.TempDir()
	makeS("chart", "LOCALBIN="+dir)
	pkgs, err := filepath.Glob(filepath.Join(dir, "dnsplane-*.tgz"))
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("make chart wrote %v (%v), want one dnsplane-<version>.tgz", pkgs, err)
	}
	var meta struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(helm(t, "show", "chart", pkgs[0]), &meta); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(version, "v"); meta.Version != want || meta.AppVersion != version {
		t.Errorf("make chart packaged version %q, appVersion %q; want %q and %q (make version %s)", meta.Version, meta.AppVersion, want, version, version)
	}
	if filepath.Base(pkgs[0]) != "dnsplane-"+meta.Version+".tgz" {
		t.Errorf("make chart wrote %s, want dnsplane-%s.tgz", filepath.Base(pkgs[0]), meta.Version)
	}
}
