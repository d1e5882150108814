package dnsendpoint

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// failingList returns a client whose every List fails, and a context whose logger collects
// what is logged.
func failingList(t *testing.T) (client.Client, context.Context, *[]string) {
	t.Helper()
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("apiserver unavailable")
		},
	}).Build()
	logged := &[]string{}
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { *logged = append(*logged, args) }, funcr.Options{}))
	return c, ctx, logged
}

func TestMapFuncs_LogAFailedList(t *testing.T) {
	c, ctx, logged := failingList(t)
	r := &Reconciler{Client: c}
	for _, tc := range []struct {
		name string
		fn   handler.MapFunc
		obj  client.Object
	}{
		{"conflictedPeers", r.conflictedPeers, &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}}},
		{"endpointsOfZone", r.endpointsOfZone, &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z"}, Spec: dnsv1.DNSZoneSpec{Zone: "example.test"}}},
	} {
		*logged = nil
		if got := tc.fn(ctx, tc.obj); len(got) != 0 {
			t.Errorf("%s: requests %v, want none", tc.name, got)
		}
		if len(*logged) == 0 || !strings.Contains((*logged)[0], "apiserver unavailable") {
			t.Errorf("%s: logged %q, want an error naming the List failure", tc.name, *logged)
		}
	}
}
