package leaderlabel_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnsplane/dnsplane/pkg/leaderlabel"
)

// TestLabeler_LabelsWhileLeadingAndClearsStaleLabels runs against a real kube-apiserver
// (envtest): a pod that kept the label from an earlier container loses it on Clear; Start labels
// it; stopping removes it; other pods and labels are never touched.
func TestLabeler_LabelsWhileLeadingAndClearsStaleLabels(t *testing.T) {
	env := &envtest.Environment{BinaryAssetsDirectory: filepath.Join("..", "..", "bin")}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest (run hack/envtest-bins.sh first): %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "dnsplane/manager:dev"}}}}
	}
	me := pod("manager-a", map[string]string{"app": "dnsplane", leaderlabel.Key: "true"}) // stale from a previous container
	other := pod("manager-b", map[string]string{"app": "dnsplane", leaderlabel.Key: "true"})
	for _, p := range []*corev1.Pod{me, other} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	labels := func(name string) map[string]string {
		t.Helper()
		var p corev1.Pod
		if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &p); err != nil {
			t.Fatal(err)
		}
		return p.Labels
	}
	l := &leaderlabel.Labeler{Client: c, Namespace: "default", Pod: "manager-a"}
	if !l.NeedLeaderElection() {
		t.Fatal("the Labeler must run in the leader only")
	}
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if got := labels("manager-a"); got[leaderlabel.Key] != "" || got["app"] != "dnsplane" {
		t.Fatalf("after Clear: %v", got)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Start(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for labels("manager-a")[leaderlabel.Key] != "true" {
		if time.Now().After(deadline) {
			t.Fatal("the leader's pod was not labelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := labels("manager-a"); got[leaderlabel.Key] != "" || got["app"] != "dnsplane" {
		t.Fatalf("after stopping: %v", got)
	}
	if got := labels("manager-b"); got[leaderlabel.Key] != "true" {
		t.Fatalf("another pod was touched: %v", got)
	}
	if err := (&leaderlabel.Labeler{Client: c, Namespace: "default", Pod: "missing"}).Start(ctx); err == nil {
		t.Fatal("labelling a missing pod must fail")
	}
}
