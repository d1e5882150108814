package replica_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/replica"
)

func TestZoneUpdate_PassesDNSZoneUpdatesItsTestAccepts(t *testing.T) {
	idChanged := func(o, n *dnsv1.DNSZone) bool { return o.Status.ZoneID != n.Status.ZoneID }
	p := replica.ZoneUpdate(idChanged)
	a := &dnsv1.DNSZone{Status: dnsv1.DNSZoneStatus{ZoneID: "a"}}
	b := &dnsv1.DNSZone{Status: dnsv1.DNSZoneStatus{ZoneID: "b"}}
	if !p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: b}) {
		t.Error("a zone ID change is filtered; want passed")
	}
	if p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: a.DeepCopy()}) {
		t.Error("an unchanged DNSZone passes; want filtered")
	}
	s := &corev1.Secret{}
	if p.Update(event.UpdateEvent{ObjectOld: s, ObjectNew: s}) {
		t.Error("a Secret update passes; want every object that is not a DNSZone filtered")
	}
	if p.Create(event.CreateEvent{Object: a}) {
		t.Error("a create passes; want filtered (For's generation predicate passes creates)")
	}
}

func TestGetSecret_ReadsByNameAndLogsNoBytes(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k"}, Data: map[string][]byte{"key": []byte("s3cret-bytes")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sec).Build()
	var logged bytes.Buffer
	logger := funcr.New(func(p, a string) { logged.WriteString(p + a + "\n") }, funcr.Options{Verbosity: 10})
	ctx := log.IntoContext(context.Background(), logger)

	got, err := replica.GetSecret(ctx, loggingReader{c}, types.NamespacedName{Namespace: "ns", Name: "k"})
	if err != nil || string(got.Data["key"]) != "s3cret-bytes" {
		t.Fatalf("GetSecret = %v, %v; want the Secret", got, err)
	}
	if bytes.Contains(logged.Bytes(), []byte("s3cret")) {
		t.Errorf("the read logged the Secret's bytes: %s", logged.String())
	}
	_, err = replica.GetSecret(ctx, c, types.NamespacedName{Namespace: "ns", Name: "missing"})
	if !apierrors.IsNotFound(err) {
		t.Errorf("GetSecret of a missing Secret = %v; want an error IsNotFound sees", err)
	}
}

// loggingReader logs what it read at V(8) with the context's logger, as client-go logs
// response bodies.
type loggingReader struct{ client.Reader }

func (r loggingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if s, ok := obj.(*corev1.Secret); ok {
		log.FromContext(ctx).V(8).Info("response body", "data", string(s.Data["key"]))
	}
	return err
}
