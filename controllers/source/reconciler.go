package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	src "github.com/dnsplane/dnsplane/pkg/source"
)

// Labels on every DNSEndpoint a source owns: the source object's kind and name (a name longer
// than a label value's 63 characters is cut to 52 plus a hash).
const (
	LabelSourceKind = "dnsplane.io/source-kind"
	LabelSourceName = "dnsplane.io/source-name"
)

// What a source controller reads and writes (docs/api.md, "Sources").
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;httproutes;grpcroutes;tlsroutes;tcproutes;udproutes,verbs=get;list;watch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler keeps one source kind's DNSEndpoints: one per source object that yields endpoints.
type Reconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	Kind     *Kind
	Config   src.Config
	// Nodes says whether cluster-scoped kinds may be read (false with --watch-namespaces): the
	// nodes, for NodePort Services and endpoints-type NodeExternalIP, and the namespaces, for a
	// Gateway listener's allowedRoutes.namespaces.selector.
	Nodes bool
	// WatchNamespaces are the manager's --watch-namespaces (nil = every namespace): a route's
	// Gateway outside them cannot be read, so it does not count.
	WatchNamespaces []string

	annotations, labels labels.Selector
}

// EndpointName returns the name of the DNSEndpoint that a source object of kind named name
// owns: <prefix>-<name>, cut to 253 characters with a hash of the whole when longer.
func EndpointName(k *Kind, name string) string {
	return limit(k.Prefix+"-"+name, 253)
}

func limit(s string, n int) string {
	if len(s) <= n {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:n-11] + "-" + hex.EncodeToString(sum[:])[:10]
}

// Reconcile publishes one source object's endpoints through its DNSEndpoint, or deletes that
// DNSEndpoint when the object is gone, filtered out, or yields none.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.remove(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, fmt.Errorf("get %s %s: %w", r.Kind.GVK.Kind, req.NamespacedName, err)
	}
	if !obj.GetDeletionTimestamp().IsZero() || !r.selected(obj) {
		return ctrl.Result{}, r.remove(ctx, req.Namespace, req.Name)
	}
	eps, probs, err := r.Kind.Desired(ctx, r, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !r.Kind.OwnTypes {
		eps = r.Config.ManagedOnly(eps)
	}
	for _, p := range probs {
		r.Recorder.Event(obj, corev1.EventTypeWarning, p.Reason, p.Message)
	}
	if len(eps) == 0 {
		err = r.remove(ctx, req.Namespace, req.Name)
	} else {
		err = r.write(ctx, obj, eps, ttlInvalid(probs))
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.observed(ctx, obj)
}

func ttlInvalid(probs []src.Problem) bool {
	return slices.ContainsFunc(probs, func(p src.Problem) bool { return p.Reason == dnsv1.ReasonInvalidTTL })
}

// selected applies --namespace, --annotation-filter, --label-filter, the controller annotation
// and the kind's own filter.
func (r *Reconciler) selected(obj client.Object) bool {
	if r.Config.Namespace != "" && obj.GetNamespace() != r.Config.Namespace {
		return false
	}
	if r.annotations != nil && !r.annotations.Matches(labels.Set(obj.GetAnnotations())) {
		return false
	}
	if r.labels != nil && !r.labels.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	if a, _ := src.ParseAnnotations(obj.GetAnnotations(), src.KeyHostnameSource); !a.Ours() {
		return false
	}
	return r.Kind.Selected == nil || r.Kind.Selected(r, obj)
}

// write creates or updates the DNSEndpoint of obj with eps; keepTTL keeps the TTLs published
// before for endpoints without one (an invalid ttl annotation changes nothing). A DNSEndpoint of
// that name that obj does not control is left alone, with a Warning Event.
func (r *Reconciler) write(ctx context.Context, obj client.Object, eps []dnsv1.Endpoint, keepTTL bool) error {
	ep := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: EndpointName(r.Kind, obj.GetName())}}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(ep), ep)
	switch {
	case apierrors.IsNotFound(err):
		r.fill(ep, obj, eps)
		if err := controllerutil.SetControllerReference(obj, ep, r.Client.Scheme()); err != nil {
			return fmt.Errorf("own DNSEndpoint %s: %w", ep.Name, err)
		}
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, ep))
	case err != nil:
		return fmt.Errorf("get DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	if !metav1.IsControlledBy(ep, obj) {
		r.Recorder.Eventf(obj, corev1.EventTypeWarning, dnsv1.ReasonOwnershipConflict,
			"DNSEndpoint %s/%s exists and is not controlled by this %s; rename or delete it to publish this object", ep.Namespace, ep.Name, r.Kind.GVK.Kind)
		return nil
	}
	if keepTTL {
		src.KeepTTLs(eps, ep.Spec.Endpoints)
	}
	before := ep.DeepCopy()
	r.fill(ep, obj, eps)
	if equality.Semantic.DeepEqual(before.Spec, ep.Spec) && equality.Semantic.DeepEqual(before.Labels, ep.Labels) {
		return nil
	}
	if err := r.Client.Update(ctx, ep); err != nil {
		return fmt.Errorf("update DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	return nil
}

// fill sets ep's labels and endpoints from obj.
func (r *Reconciler) fill(ep *dnsv1.DNSEndpoint, obj client.Object, eps []dnsv1.Endpoint) {
	if ep.Labels == nil {
		ep.Labels = map[string]string{}
	}
	ep.Labels[LabelSourceKind] = r.Kind.GVK.Kind
	ep.Labels[LabelSourceName] = labelValue(obj.GetName())
	ep.Spec.Endpoints = eps
}

// labelValue returns name as a label value (at most 63 characters: cut, with a hash, when
// longer).
func labelValue(name string) string { return limit(name, 63) }

// remove deletes the DNSEndpoint of the source object namespace/name, if this kind owns it (its
// controller reference names this kind and name).
func (r *Reconciler) remove(ctx context.Context, namespace, name string) error {
	ep := &dnsv1.DNSEndpoint{}
	key := client.ObjectKey{Namespace: namespace, Name: EndpointName(r.Kind, name)}
	if err := r.Client.Get(ctx, key, ep); err != nil {
		return client.IgnoreNotFound(err)
	}
	owner := metav1.GetControllerOf(ep)
	if owner == nil || owner.Kind != r.Kind.GVK.Kind || owner.Name != name || ep.Labels[LabelSourceKind] != r.Kind.GVK.Kind {
		return nil // not ours
	}
	if err := r.Client.Delete(ctx, ep, client.Preconditions{UID: &ep.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete DNSEndpoint %s: %w", key, err)
	}
	log.FromContext(ctx).V(1).Info("deleted the DNSEndpoint of a source object that yields no endpoints", "dnsendpoint", key)
	return nil
}

// observed writes status.observedGeneration of an external-dns DNSEndpoint (--source=crd), as
// external-dns's own controller does; other kinds have no such field to write.
func (r *Reconciler) observed(ctx context.Context, obj client.Object) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if g, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); found && g == u.GetGeneration() {
		return nil
	}
	if err := unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration"); err != nil {
		return fmt.Errorf("set status.observedGeneration: %w", err)
	}
	if err := r.Client.Status().Update(ctx, u); err != nil {
		if apierrors.IsConflict(err) {
			return nil // a newer generation is on its way here
		}
		return fmt.Errorf("write status.observedGeneration of %s %s/%s: %w", r.Kind.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}
