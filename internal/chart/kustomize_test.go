package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of a kustomization.yaml that config/ uses.
type kustomization struct {
	Namespace  string   `json:"namespace"`
	NamePrefix string   `json:"namePrefix"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// kustomize renders dir as kustomize build does for what config/ uses (resources, namespace,
// namePrefix and images; sigs.k8s.io/kustomize is not in go.mod's graph, and config/ is small).
// The name prefix follows the references config/ has: roleRef, subjects and serviceAccountName.
func kustomize(dir string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, fmt.Errorf("read kustomization: %w", err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(raw, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		var got []*unstructured.Unstructured
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			got, err = kustomize(p)
			if err != nil {
				return nil, err
			}
		} else {
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("read resource: %w", err)
			}
			if got, err = decodeAll(data); err != nil {
				return nil, fmt.Errorf("decode %s: %w", p, err)
			}
		}
		objs = append(objs, got...)
	}
	for _, o := range objs {
		transform(o, k)
	}
	return objs, nil
}

// transform applies k's images, namePrefix and namespace to o.
func transform(o *unstructured.Unstructured, k kustomization) {
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true}
	if k.NamePrefix != "" && o.GetKind() != "CustomResourceDefinition" {
		o.SetName(k.NamePrefix + o.GetName())
		if ref, ok, _ := unstructured.NestedString(o.Object, "roleRef", "name"); ok {
			_ = unstructured.SetNestedField(o.Object, k.NamePrefix+ref, "roleRef", "name")
		}
		if sa, ok, _ := unstructured.NestedString(o.Object, "spec", "template", "spec", "serviceAccountName"); ok {
			_ = unstructured.SetNestedField(o.Object, k.NamePrefix+sa, "spec", "template", "spec", "serviceAccountName")
		}
	}
	if k.Namespace != "" && !clusterScoped[o.GetKind()] {
		o.SetNamespace(k.Namespace)
	}
	if k.Namespace != "" && o.GetKind() == "Namespace" {
		o.SetName(k.Namespace)
	}
	subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	for _, s := range subjects {
		m := s.(map[string]any)
		if k.NamePrefix != "" {
			m["name"] = k.NamePrefix + m["name"].(string)
		}
		if k.Namespace != "" {
			m["namespace"] = k.Namespace
		}
	}
	if subjects != nil {
		_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
	}
	containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m := c.(map[string]any)
		name, _, _ := strings.Cut(m["image"].(string), ":")
		for _, img := range k.Images {
			if img.Name == name {
				m["image"] = img.NewName + ":" + img.NewTag
			}
		}
	}
	if containers != nil {
		_ = unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
	}
}

// rendering indexes objects by kind and name.
type rendering []*unstructured.Unstructured

// all returns the objects of kind.
func (r rendering) all(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the one object of kind whose name ends with suffix, or fails t.
func (r rendering) one(t *testing.T, kind, suffix string) *unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, o := range r.all(kind) {
		if strings.HasSuffix(o.GetName(), suffix) {
			out = append(out, o)
		}
	}
	if len(out) != 1 {
		t.Fatalf("%d %s objects named *%s, want 1", len(out), kind, suffix)
	}
	return out[0]
}

// ruleSet flattens a role's rules into sorted "group resource verb" lines (and "url verb" for
// non-resource URLs), so that two roles granting the same compare equal however they are laid out.
func ruleSet(t *testing.T, role *unstructured.Unstructured) []string {
	t.Helper()
	rules, _, err := unstructured.NestedSlice(role.Object, "rules")
	if err != nil {
		t.Fatal(err)
	}
	strs := func(m map[string]any, key string) []string {
		v, _, _ := unstructured.NestedStringSlice(m, key)
		return v
	}
	var out []string
	for _, r := range rules {
		m := r.(map[string]any)
		for _, v := range strs(m, "verbs") {
			for _, u := range strs(m, "nonResourceURLs") {
				out = append(out, u+" "+v)
			}
			for _, g := range strs(m, "apiGroups") {
				for _, res := range strs(m, "resources") {
					names := strs(m, "resourceNames")
					if len(names) == 0 {
						names = []string{"*"}
					}
					for _, n := range names {
						out = append(out, fmt.Sprintf("%q %s/%s %s", g, res, n, v))
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// podSpec returns the Deployment's pod template spec.
func podSpec(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	spec, ok, err := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if !ok || err != nil {
		t.Fatalf("Deployment %s has no pod spec: %v", d.GetName(), err)
	}
	return spec
}

// manager returns the Deployment's container "manager".
func manager(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	for _, c := range podSpec(t, d)["containers"].([]any) {
		if m := c.(map[string]any); m["name"] == "manager" {
			return m
		}
	}
	t.Fatalf("Deployment %s has no container manager", d.GetName())
	return nil
}

// boundServiceAccount checks that every binding of kind (at least one) binds the ServiceAccount
// the Deployment runs as, in the Deployment's namespace, and that the ServiceAccount is rendered.
func boundServiceAccount(t *testing.T, r rendering, kind string) {
	t.Helper()
	d := r.one(t, "Deployment", "")
	sa := podSpec(t, d)["serviceAccountName"]
	if len(r.all(kind)) == 0 {
		t.Errorf("no %s", kind)
	}
	for _, b := range r.all(kind) {
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		want := []any{map[string]any{"kind": "ServiceAccount", "name": sa, "namespace": d.GetNamespace()}}
		if !reflect.DeepEqual(subjects, want) {
			t.Errorf("%s %s subjects %v, want %v", kind, b.GetName(), subjects, want)
		}
	}
	if r.one(t, "ServiceAccount", "").GetName() != sa {
		t.Errorf("the ServiceAccount is not %v", sa)
	}
}

// TestChartAgreesWithKustomize: with the default values the chart and config/default grant the
// same RBAC rules (the manager's ClusterRole and the leader-election Role), bind them to the
// ServiceAccount the Deployment runs as, and run the same Deployment: image repository, args,
// env, ports, probes, security contexts, resources, volumes, replicas. Only the image tag (the
// chart's appVersion) and the names (kustomize's prefix, Helm's release name) differ.
func TestChartAgreesWithKustomize(t *testing.T) {
	objs, err := kustomize(filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	kust, chart := rendering(objs), rendering(render(t))

	// Every (Cluster)Role of config/default, e.g. dnsplane-manager-role, is in the chart as
	// <release>-manager with the same rules.
	roles := append(kust.all("ClusterRole"), kust.all("Role")...)
	if len(roles) < 2 {
		t.Fatalf("config/default has %d roles, want the manager's and leader election's at least", len(roles))
	}
	for _, role := range roles {
		suffix := "-" + strings.TrimSuffix(strings.TrimPrefix(role.GetName(), "dnsplane-"), "-role")
		want, got := ruleSet(t, role), ruleSet(t, chart.one(t, role.GetKind(), suffix))
		if !slices.Equal(got, want) {
			t.Errorf("chart %s *%s rules:\n%s\nconfig/default:\n%s", role.GetKind(), suffix, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	for _, r := range []rendering{kust, chart} {
		boundServiceAccount(t, r, "ClusterRoleBinding")
		boundServiceAccount(t, r, "RoleBinding")
	}

	kd, cd := kust.one(t, "Deployment", ""), chart.one(t, "Deployment", "")
	if a, b := kd.Object["spec"].(map[string]any)["replicas"], cd.Object["spec"].(map[string]any)["replicas"]; !reflect.DeepEqual(a, b) {
		t.Errorf("replicas: chart %v, config/default %v", b, a)
	}
	for _, key := range []string{"securityContext", "volumes", "terminationGracePeriodSeconds"} {
		if a, b := podSpec(t, kd)[key], podSpec(t, cd)[key]; !reflect.DeepEqual(a, b) {
			t.Errorf("pod %s: chart %v, config/default %v", key, b, a)
		}
	}
	km, cm := manager(t, kd), manager(t, cd)
	for _, key := range []string{"args", "env", "ports", "lifecycle", "livenessProbe", "readinessProbe", "securityContext", "resources", "volumeMounts"} {
		if !reflect.DeepEqual(km[key], cm[key]) {
			t.Errorf("container %s:\n chart          %v\n config/default %v", key, cm[key], km[key])
		}
	}
	repo := func(img any) string { r, _, _ := strings.Cut(img.(string), ":"); return r }
	if a, b := repo(km["image"]), repo(cm["image"]); a != b {
		t.Errorf("image repository: chart %s, config/default %s", b, a)
	}

	ks, cs := kust.one(t, "Service", "dns"), chart.one(t, "Service", "dns")
	for _, path := range [][]string{{"spec", "ports"}} {
		a, _, _ := unstructured.NestedFieldNoCopy(ks.Object, path...)
		b, _, _ := unstructured.NestedFieldNoCopy(cs.Object, path...)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("dns Service %v: chart %v, config/default %v", path, b, a)
		}
	}
	for name, r := range map[string]rendering{"chart": chart, "config/default": kust} {
		everyReadyReplica(t, name, r)
	}
}

// everyReadyReplica: the dns Service selects every replica of the Deployment (its selector is
// a subset of the pod template's labels; no leader label), and only ready ones (no
// publishNotReadyAddresses): every replica serves the current zones (docs/design.md).
func everyReadyReplica(t *testing.T, name string, r rendering) {
	t.Helper()
	svc, dep := r.one(t, "Service", "dns"), r.one(t, "Deployment", "")
	selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	labels, _, _ := unstructured.NestedStringMap(dep.Object, "spec", "template", "metadata", "labels")
	if len(selector) == 0 {
		t.Errorf("%s: the dns Service selects nothing", name)
	}
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("%s: the dns Service selects %s=%s, which the manager's pod template (%v) does not carry", name, k, v, labels)
		}
	}
	if p, _, _ := unstructured.NestedBool(svc.Object, "spec", "publishNotReadyAddresses"); p {
		t.Errorf("%s: the dns Service publishes replicas that are not ready", name)
	}
}

// TestChartNamespacedRBAC: in namespaced mode the chart renders no ClusterRole and no
// ClusterRoleBinding; each watched namespace (the release's first) gets a Role with exactly the
// rules of config's ClusterRole less those on cluster-scoped resources, which a Role cannot
// grant (the kube-system Namespace, Nodes, TokenReviews, SubjectAccessReviews: namespaced mode
// needs ownerID, reads no nodes and serves /metrics on loopback), bound to the manager's ServiceAccount.
func TestChartNamespacedRBAC(t *testing.T) {
	objs, err := kustomize(filepath.Join(repoRoot, "config", "default"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	release := ruleSet(t, rendering(objs).one(t, "Role", "manager-role")) // the zone store's, in the release namespace
	for _, r := range ruleSet(t, rendering(objs).one(t, "ClusterRole", "manager-role")) {
		if !strings.Contains(r, " namespaces/") && !strings.Contains(r, " nodes/") && !strings.Contains(r, " tokenreviews/") && !strings.Contains(r, " subjectaccessreviews/") {
			want = append(want, r)
		}
	}
	if len(want) == 0 {
		t.Fatal("config's ClusterRole has no namespaced rules")
	}
	chart := rendering(render(t, namespacedSets...))
	if n := len(chart.all("ClusterRole")) + len(chart.all("ClusterRoleBinding")); n != 0 {
		t.Fatalf("namespaced mode renders %d cluster-scoped RBAC objects, want 0", n)
	}
	byNS := map[string]bool{}
	for _, role := range chart.all("Role") {
		if !strings.HasSuffix(role.GetName(), "-manager") {
			continue
		}
		byNS[role.GetNamespace()] = true
		want := want
		if role.GetNamespace() == releaseNS {
			want = slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(want), release...))))
		}
		if got := ruleSet(t, role); !slices.Equal(got, want) {
			t.Errorf("Role %s/%s rules %v, want config's ClusterRole's %v", role.GetNamespace(), role.GetName(), got, want)
		}
	}
	for _, b := range chart.all("RoleBinding") {
		subjects, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != releaseNS {
			t.Errorf("RoleBinding %s/%s subjects %v", b.GetNamespace(), b.GetName(), subjects)
		}
	}
	if want := map[string]bool{releaseNS: true, "team-a": true, "team-b": true}; !reflect.DeepEqual(byNS, want) {
		t.Errorf("manager Roles in %v, want %v", byNS, want)
	}
}
