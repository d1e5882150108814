package chart

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// startEnv starts a kube-apiserver and etcd (envtest) with crds installed and returns a client;
// they stop when t ends.
func startEnv(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) (*rest.Config, client.Client) {
	t.Helper()
	return clientFor(t, envtest.StartWith(t, repoRoot, envtest.Options{CRDs: crds}).Config)
}

// startHelmEnv starts a kube-apiserver and etcd (envtest) with no CRD, for helm to install into,
// and returns the path of a kubeconfig file of an admin user named helm and a client as that user;
// they stop when t ends.
func startHelmEnv(t *testing.T) (kubeconfig string, c client.Client) {
	t.Helper()
	cfg, kc, err := envtest.StartWith(t, repoRoot, envtest.Options{NoCRDs: true}).AddAdmin("helm")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	_, c = clientFor(t, cfg)
	return kubeconfig, c
}

// clientFor returns cfg and a client over it that knows the built-in kinds, CRDs and dnsplane's.
func clientFor(t *testing.T, cfg *rest.Config) (*rest.Config, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(apiextensionsv1.AddToScheme(scheme), dnsv1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

// serviceMonitorCRD is a minimal monitoring.coreos.com/v1 ServiceMonitor CRD: the Prometheus
// Operator's own is not in this module's graph, so the dry run checks the ServiceMonitor's
// metadata and kind, not its spec's schema (preserve-unknown-fields).
func serviceMonitorCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "servicemonitors.monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "servicemonitors", Singular: "servicemonitor", Kind: "ServiceMonitor", ListKind: "ServiceMonitorList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
			}},
		},
	}
}

// TestRenderedChartDryRun: every object helm template renders is accepted by a real
// kube-apiserver, for the default values, namespaced mode, everything switched on
// (testdata/all-on.yaml) and a NodePort with plain metrics. The CRDs the chart renders are created
// for real first (so they are valid CRDs, and the API server knows their kinds); every other
// object is created with a server-side dry run (client.DryRunAll): full validation and admission,
// nothing stored.
func TestRenderedChartDryRun(t *testing.T) {
	helmBin(t)
	_, c := startEnv(t, []*apiextensionsv1.CustomResourceDefinition{serviceMonitorCRD()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	installRenderedCRDs(ctx, t, c, render(t))

	for _, tc := range []struct {
		name, ns string
		sets     []string
		watched  []string
	}{
		{"default", "dnsplane-system", nil, nil},
		{"namespaced", "dns-ns", namespacedSets, []string{"team-a", "team-b"}},
		{"all-on", "dns-all", []string{"@testdata/all-on.yaml"}, nil},
		{"nodeport", "dns-np", []string{"dns.service.type=NodePort", "metrics.secure=false", "metrics.serviceMonitor.enabled=true", "replicaCount=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ns := range append([]string{tc.ns}, tc.watched...) {
				err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatal(err)
				}
			}
			objs := renderIn(t, "rel-"+tc.name, tc.ns, tc.sets...)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
				if o.GetKind() == "CustomResourceDefinition" {
					continue // created for real above
				}
				if err := c.Create(ctx, o, client.DryRunAll); err != nil {
					t.Errorf("dry-run create %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
			t.Logf("dry-run created %v", kinds)
			if kinds["Deployment"] != 1 {
				t.Errorf("rendered %v, want one Deployment", kinds)
			}
		})
	}
	t.Run("metrics reader binding grants /metrics", func(t *testing.T) { metricsReaderGrants(ctx, t, c) })
}

// metricsReaderGrants: with metrics.reader.serviceAccount set, the rendered
// metrics-reader ClusterRole and ClusterRoleBinding, created for real, let that ServiceAccount get
// /metrics, as the manager's SubjectAccessReview asks (docs/metrics.md), and no other.
func metricsReaderGrants(ctx context.Context, t *testing.T, c client.Client) {
	for _, o := range renderIn(t, "rel-reader", "dns-reader", "metrics.reader.serviceAccount.name=prometheus",
		"metrics.reader.serviceAccount.namespace=monitoring") {
		if (o.GetKind() == "ClusterRole" || o.GetKind() == "ClusterRoleBinding") && o.GetName() == "rel-reader-dnsplane-metrics-reader" {
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
			}
		}
	}
	for user, want := range map[string]bool{
		"system:serviceaccount:monitoring:prometheus": true,
		"system:serviceaccount:monitoring:other":      false,
		"system:serviceaccount:dns-reader:prometheus": false,
	} {
		// RBAC reads the binding from an informer: allowed once it has seen it.
		eventually(t, time.Minute, fmt.Sprintf("SubjectAccessReview of get /metrics by %s is %v", user, want), func() error {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
			}}
			if err := c.Create(ctx, sar); err != nil {
				return err
			}
			if sar.Status.Allowed != want {
				return fmt.Errorf("allowed %v (%s)", sar.Status.Allowed, sar.Status.Reason)
			}
			return nil
		})
	}
}

// installRenderedCRDs creates the CRDs among objs and waits until each is established.
func installRenderedCRDs(ctx context.Context, t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	var names []string
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("create the rendered CRD %s: %v", o.GetName(), err)
		}
		names = append(names, o.GetName())
	}
	if len(names) != 4 {
		t.Fatalf("the chart rendered CRDs %v, want 4", names)
	}
	for _, name := range names {
		eventually(t, time.Minute, "CRD "+name+" established", func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("conditions %v", crd.Status.Conditions)
		})
	}
}

// eventually is testrun.Eventually: check every 100 ms until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	testrun.Eventually(t, timeout, what, check)
}
