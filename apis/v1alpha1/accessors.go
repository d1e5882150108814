package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ConditionsAccessor is implemented by every kind of this group: it reads and replaces
// status.conditions, so generic code (conditions, Events, summaries) takes the object rather than
// a pointer into its status. The accessor pair follows Cluster API's conditions.Getter and
// conditions.Setter.
//
// +kubebuilder:object:generate=false
type ConditionsAccessor interface {
	// GetConditions returns status.conditions; the slice is the object's own, not a copy.
	GetConditions() []metav1.Condition
	// SetConditions replaces status.conditions.
	SetConditions([]metav1.Condition)
}

// Publisher is a DNSEndpoint or DNSRecord: an object that publishes endpoints into DNSZones
// through the shared publishing blocks of its spec and status.
//
// +kubebuilder:object:generate=false
type Publisher interface {
	metav1.Object
	runtime.Object
	ConditionsAccessor
	// PublishingSpec returns the spec's publishing block; callers read it.
	PublishingSpec() *PublishingSpec
	// PublishingStatus returns the status's publishing block; callers read and write it.
	PublishingStatus() *PublishingStatus
	// HeldZones returns status.zones: the DNSZones, as namespace/name, that hold the object's
	// records.
	HeldZones() []string
	// SetHeldZones replaces status.zones.
	SetHeldZones([]string)
	// PlanSpec returns a copy of the spec with approvedPlan cleared: what a plan ID hashes
	// besides the changes, so approving a plan does not change its ID.
	PlanSpec() any
}

var (
	_ ConditionsAccessor = &DNSZone{}
	_ ConditionsAccessor = &Gslb{}
	_ Publisher          = &DNSEndpoint{}
	_ Publisher          = &DNSRecord{}
)

// GetConditions returns status.conditions.
func (z *DNSZone) GetConditions() []metav1.Condition { return z.Status.Conditions }

// SetConditions replaces status.conditions.
func (z *DNSZone) SetConditions(c []metav1.Condition) { z.Status.Conditions = c }

// GetConditions returns status.conditions.
func (g *Gslb) GetConditions() []metav1.Condition { return g.Status.Conditions }

// SetConditions replaces status.conditions.
func (g *Gslb) SetConditions(c []metav1.Condition) { g.Status.Conditions = c }

// GetConditions returns status.conditions.
func (e *DNSEndpoint) GetConditions() []metav1.Condition { return e.Status.Conditions }

// SetConditions replaces status.conditions.
func (e *DNSEndpoint) SetConditions(c []metav1.Condition) { e.Status.Conditions = c }

// PublishingSpec returns the spec's publishing block.
func (e *DNSEndpoint) PublishingSpec() *PublishingSpec { return &e.Spec.PublishingSpec }

// PublishingStatus returns the status's publishing block.
func (e *DNSEndpoint) PublishingStatus() *PublishingStatus { return &e.Status.PublishingStatus }

// HeldZones returns status.zones.
func (e *DNSEndpoint) HeldZones() []string { return e.Status.Zones }

// SetHeldZones replaces status.zones.
func (e *DNSEndpoint) SetHeldZones(z []string) { e.Status.Zones = z }

// PlanSpec returns a copy of the spec with approvedPlan cleared.
func (e *DNSEndpoint) PlanSpec() any {
	s := e.Spec.DeepCopy()
	s.ApprovedPlan = ""
	return s
}

// GetConditions returns status.conditions.
func (r *DNSRecord) GetConditions() []metav1.Condition { return r.Status.Conditions }

// SetConditions replaces status.conditions.
func (r *DNSRecord) SetConditions(c []metav1.Condition) { r.Status.Conditions = c }

// PublishingSpec returns the spec's publishing block.
func (r *DNSRecord) PublishingSpec() *PublishingSpec { return &r.Spec.PublishingSpec }

// PublishingStatus returns the status's publishing block.
func (r *DNSRecord) PublishingStatus() *PublishingStatus { return &r.Status.PublishingStatus }

// HeldZones returns status.zones.
func (r *DNSRecord) HeldZones() []string { return r.Status.Zones }

// SetHeldZones replaces status.zones.
func (r *DNSRecord) SetHeldZones(z []string) { r.Status.Zones = z }

// PlanSpec returns a copy of the spec with approvedPlan cleared.
func (r *DNSRecord) PlanSpec() any {
	s := r.Spec.DeepCopy()
	s.ApprovedPlan = ""
	return s
}

// NamespacedName returns the referenced DNSZone's key: Namespace, or referrer (the referring
// object's namespace) when Namespace is empty (the rule documented on ZoneReference).
func (r ZoneReference) NamespacedName(referrer string) types.NamespacedName {
	ns := r.Namespace
	if ns == "" {
		ns = referrer
	}
	return types.NamespacedName{Namespace: ns, Name: r.Name}
}
