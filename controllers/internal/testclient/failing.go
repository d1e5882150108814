package testclient

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ErrListFailed is what every List of a FailingList client returns.
var ErrListFailed = errors.New("apiserver unavailable")

// FailingList returns a fake client (dnsplane's kinds) whose every List
// fails with ErrListFailed, and a context whose logger appends each logged line's key-value
// text to the returned slice.
func FailingList(t testing.TB) (client.Client, context.Context, *[]string) {
	t.Helper()
	s := runtime.NewScheme()
	if err := dnsv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return ErrListFailed
		},
	}).Build()
	logged := &[]string{}
	ctx := log.IntoContext(context.Background(), funcr.New(func(_, args string) { *logged = append(*logged, args) }, funcr.Options{}))
	return c, ctx, logged
}
