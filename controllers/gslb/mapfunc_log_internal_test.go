package gslb

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnsplane/dnsplane/internal/testing/mapfunctest"
)

func TestMapFuncs_LogAFailedList(t *testing.T) {
	mapfunctest.LogsAFailedList(t, func(c client.Client) []mapfunctest.Case {
		r := &Reconciler{Client: c}
		return []mapfunctest.Case{
			{Name: "gslbsOf(Service)", Fn: r.gslbsOf("Service"), Obj: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}},
		}
	})
}
