package chart

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// olderChart writes a copy of the chart to a temporary directory as an older release would be:
// chart version 0.0.1, and a DNSEndpoint CRD without spec.approvedPlan. It returns its path.
func olderChart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dnsplane")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	chartYAML := filepath.Join(dir, "Chart.yaml")
	raw, err := os.ReadFile(chartYAML)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "version:") {
			lines[i] = "version: 0.0.1"
		}
	}
	if err := os.WriteFile(chartYAML, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	crdFile := filepath.Join(dir, "files", "crds", "dnsplane.io_dnsendpoints.yaml")
	if raw, err = os.ReadFile(crdFile); err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	delete(spec.Properties, "approvedPlan")
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if raw, err = yaml.Marshal(&crd); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crdFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hasApprovedPlan reports whether the installed DNSEndpoint CRD has spec.approvedPlan, and fails
// t unless the CRD carries helm.sh/resource-policy: keep.
func hasApprovedPlan(ctx context.Context, t *testing.T, c client.Client) bool {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "dnsendpoints.dnsplane.io"}, &crd); err != nil {
		t.Fatal(err)
	}
	if crd.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("CRD annotations %v lack helm.sh/resource-policy: keep", crd.Annotations)
	}
	_, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["approvedPlan"]
	return ok
}

// TestHelmUpgradeUpgradesCRDsAndUninstallKeepsThem: the CRD upgrade story with the real helm
// against a real API server. helm install of an older chart installs its older CRDs; helm upgrade
// to this chart upgrades them (they are templates, not crds/, which Helm never upgrades); helm
// uninstall deletes the manager and its RBAC but keeps the CRDs (helm.sh/resource-policy: keep).
func TestHelmUpgradeUpgradesCRDsAndUninstallKeepsThem(t *testing.T) {
	helmBin(t)
	kc, c := startHelmEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	on := []string{"--kubeconfig", kc, "--namespace", releaseNS}

	helm(t, append([]string{"install", releaseName, olderChart(t), "--create-namespace"}, on...)...)
	if hasApprovedPlan(ctx, t, c) {
		t.Fatal("the older chart installed a DNSEndpoint CRD with spec.approvedPlan")
	}
	helm(t, append([]string{"upgrade", releaseName, chartDir}, on...)...)
	if !hasApprovedPlan(ctx, t, c) {
		t.Fatal("helm upgrade left the older DNSEndpoint CRD in place")
	}
	helm(t, append([]string{"uninstall", releaseName}, on...)...)
	eventually(t, time.Minute, "the Deployment deleted", func() error {
		err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: releaseName}, &appsv1.Deployment{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.Join(err, errors.New("still there"))
	})
	var crds apiextensionsv1.CustomResourceDefinitionList
	if err := c.List(ctx, &crds); err != nil {
		t.Fatal(err)
	}
	if len(crds.Items) != 4 {
		t.Errorf("%d CRDs after helm uninstall, want the 4 kept", len(crds.Items))
	}
}

// TestHelmGetValuesFileUpgrades: docs/install.md's Upgrade section recovers a lost values file
// with its `helm get values` command, run word for word against a real release; the file it
// writes is one the chart takes: helm template renders with it, and helm upgrade -f it keeps the
// release's values (the NodePort dns Service on 30053, the geo tag).
func TestHelmGetValuesFileUpgrades(t *testing.T) {
	helmBin(t)
	kc, c := startHelmEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	on := []string{"--kubeconfig", kc, "--namespace", releaseNS}
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("geoTag: eu\ndns:\n  service: {type: NodePort, nodePort: 30053}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	helm(t, append([]string{"install", releaseName, chartDir, "--create-namespace", "-f", values}, on...)...)

	dir := t.TempDir()
	cmd := docsLine(t, "## Upgrade", "helm get values")
	docsShell(t, dir, kc, cmd)
	recovered := filepath.Join(dir, "my-values.yaml")
	raw, err := os.ReadFile(recovered)
	if err != nil {
		t.Fatalf("%s wrote no my-values.yaml: %v", cmd, err)
	}
	if _, err := helmErr(t, "template", releaseName, chartDir, "--namespace", releaseNS, "-f", recovered); err != nil {
		t.Fatalf("helm template -f the file of %q:\n%s\nrefused: %v", cmd, raw, err)
	}
	helm(t, append([]string{"upgrade", releaseName, chartDir, "-f", recovered}, on...)...)
	typ, ports := nodePorts(ctx, t, c)
	if typ != corev1.ServiceTypeNodePort || strings.Join(ports, ",") != "53:30053/UDP,53:30053/TCP" {
		t.Errorf("after helm upgrade -f the recovered values: the dns Service is %s %v, want NodePort 53:30053/UDP,53:30053/TCP", typ, ports)
	}
	var d appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKey{Namespace: releaseNS, Name: releaseName}, &d); err != nil {
		t.Fatal(err)
	}
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--geo-tag=eu") {
		t.Errorf("after helm upgrade -f the recovered values: the manager's args %v lack --geo-tag=eu", args)
	}
}
