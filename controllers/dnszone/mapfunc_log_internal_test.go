package dnszone

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/testclient"
)

func TestMapFuncs_LogAFailedList(t *testing.T) {
	c, ctx, logged := testclient.FailingList(t)
	r := &Reconciler{Client: c}
	for _, tc := range []struct {
		name string
		fn   handler.MapFunc
		obj  client.Object
	}{
		{"childrenOf", r.childrenOf, &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "parent"}, Spec: dnsv1.DNSZoneSpec{Zone: "example.test"}}},
	} {
		*logged = nil
		if got := tc.fn(ctx, tc.obj); len(got) != 0 {
			t.Errorf("%s: requests %v, want none", tc.name, got)
		}
		if len(*logged) != 1 || !strings.Contains((*logged)[0], "apiserver unavailable") {
			t.Errorf("%s: logged %q, want one error naming the List failure", tc.name, *logged)
		}
	}
}
