package dnsendpoint

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/mapfunctest"
)

func TestMapFuncs_LogAFailedList(t *testing.T) {
	mapfunctest.LogsAFailedList(t, func(c client.Client) []mapfunctest.Case {
		r := &Reconciler{Client: c}
		return []mapfunctest.Case{
			{Name: "endpointsOfZone", Fn: r.endpointsOfZone, Obj: &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "z"}, Spec: dnsv1.DNSZoneSpec{Zone: "example.test"}}, Lists: true},
		}
	})
}
