// Package mapfunctest tests what the controllers' map funcs (handler.MapFunc, which cannot
// return an error) do when the API server fails them: a client whose every List fails, and the
// one table test that each map func returns no request and logs one error naming the failure.
// It is imported by tests only and owns no production code.
package mapfunctest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ErrListFailed is what every List of a FailingList client returns.
var ErrListFailed = errors.New("apiserver unavailable")

// FailingList returns a fake client (dnsplane's kinds) whose every List fails with
// ErrListFailed, and a context whose logger appends each logged line's key-value text to the
// returned slice.
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

// Case is one map func and an object it maps.
type Case struct {
	Name string
	Fn   handler.MapFunc
	Obj  client.Object
	// Lists says the map func lists more than once (one logged error per List), so it logs at
	// least one line, the first naming the failure; otherwise it logs exactly one.
	Lists bool
}

// LogsAFailedList builds the cases over a FailingList client and checks each: its map func
// returns no request and logs exactly one line (at least one with Case.Lists), the first naming
// ErrListFailed.
func LogsAFailedList(t *testing.T, cases func(c client.Client) []Case) {
	t.Helper()
	c, ctx, logged := FailingList(t)
	for _, tc := range cases(c) {
		*logged = nil
		if got := tc.Fn(ctx, tc.Obj); len(got) != 0 {
			t.Errorf("%s: requests %v, want none", tc.Name, got)
		}
		if len(*logged) == 0 || (!tc.Lists && len(*logged) != 1) || !strings.Contains((*logged)[0], ErrListFailed.Error()) {
			t.Errorf("%s: logged %q, want one error naming the List failure", tc.Name, *logged)
		}
	}
}
