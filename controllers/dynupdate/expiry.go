package dynupdate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// ReasonDynamicUpdateExpired (Normal, on the DNSEndpoint): its records outlived the dynamic
// update TTL and it was deleted.
const ReasonDynamicUpdateExpired = "DynamicUpdateExpired"

// Expiry deletes the DNSEndpoints that dynamic updates wrote once their
// dnsv1.AnnotationDynamicUpdateExpires has passed. It runs on the leader.
type Expiry struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Clock, default the real clock.
	Clock clock.PassiveClock
}

// SetupWithManager watches the DNSEndpoints labelled dnsv1.LabelDynamicUpdateZone.
func (e *Expiry) SetupWithManager(mgr ctrl.Manager, name string) error {
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[dnsv1.LabelDynamicUpdateZone]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&dnsv1.DNSEndpoint{}, builder.WithPredicates(ours)).
		Complete(e)
}

// Reconcile reads the DNSEndpoint and deletes it once it expired, or waits until it does. An
// expiry annotation that does not parse is treated as passed: the records are short-lived by
// contract. Errors: the API server's, retried.
func (e *Expiry) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var ep dnsv1.DNSEndpoint
	if err := e.Client.Get(ctx, req.NamespacedName, &ep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	v, ok := ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires]
	if !ok || !ep.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	now := e.clock().Now()
	if at, err := time.Parse(time.RFC3339, v); err == nil && now.Before(at) {
		return ctrl.Result{RequeueAfter: at.Sub(now)}, nil
	}
	rv := ep.ResourceVersion
	if err := e.Client.Delete(ctx, &ep, client.Preconditions{ResourceVersion: &rv}); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		// A Conflict: an UPDATE refreshed it meanwhile; the retry reads it again.
		return ctrl.Result{}, fmt.Errorf("delete expired DNSEndpoint %s: %w", req.NamespacedName, err)
	}
	log.FromContext(ctx).Info("dynamic-update records expired", "expires", v)
	if e.Recorder != nil {
		e.Recorder.Eventf(&ep, "Normal", ReasonDynamicUpdateExpired, "records written through RFC 2136 UPDATE expired at %s", v)
	}
	return ctrl.Result{}, nil
}

func (e *Expiry) clock() clock.PassiveClock {
	if e.Clock != nil {
		return e.Clock
	}
	return clock.RealClock{}
}
