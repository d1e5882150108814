package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSEndpointSpec lists endpoints to publish. Each name has a single owner.
type DNSEndpointSpec struct {
	// Endpoints to publish; at most 128.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	// ZoneRef names the DNSZone to publish into. Without it, each endpoint goes to the DNSZone in
	// this namespace whose zone is the longest suffix of its dnsName.
	// +optional
	ZoneRef *ZoneReference `json:"zoneRef,omitempty"`

	// Strategy is FullSync (apply every plan), DryRun (only plan) or Disabled.
	// +optional
	// +kubebuilder:default=FullSync
	Strategy Strategy `json:"strategy,omitempty"`

	// ApprovedPlan, under DryRun, applies the plan whose ID equals it, once.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ApprovedPlan string `json:"approvedPlan,omitempty"`
}

// DNSEndpointStatus is what the DNSEndpoint controller observed.
type DNSEndpointStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Plan is what remains to be written: under DryRun the pending changes; after an apply
	// (FullSync, or an approved plan) empty, or the changes of the zones a failed apply did not
	// reach. Updates show the targets and TTL they replace.
	// +optional
	Plan *Plan `json:"plan,omitempty"`

	// AppliedPlan is the ID of the last plan applied through spec.approvedPlan under DryRun.
	// +optional
	AppliedPlan string `json:"appliedPlan,omitempty"`

	// Zones are the DNSZones, as namespace/name, that hold this object's records. The
	// controller plans these and the zones the endpoints choose, so records left by an earlier
	// spec are removed, and deletion cleans up exactly these.
	// +optional
	Zones []string `json:"zones,omitempty"`

	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DNSEndpoint publishes a list of endpoints, external-dns compatible: an external-dns DNSEndpoint
// works after changing only its apiVersion.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dnsep,categories=dnsplane
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNSEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSEndpointSpec   `json:"spec,omitempty"`
	Status DNSEndpointStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSEndpointList is a list of DNSEndpoints.
type DNSEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSEndpoint `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DNSEndpoint{}, &DNSEndpointList{})
}
