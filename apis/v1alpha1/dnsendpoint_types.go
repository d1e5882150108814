package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSEndpointSpec lists endpoints to publish. Each name has a single owner.
type DNSEndpointSpec struct {
	// PublishingSpec: endpoints, zoneRef, strategy and approvedPlan, shared with DNSRecord.
	PublishingSpec `json:",inline"`

	// Policy says which record-set changes are written, as external-dns' --policy does: Sync
	// writes every change, UpsertOnly never deletes a record set (not when an endpoint is
	// removed, nor when the object is deleted: its records and registry records stay), and
	// CreateOnly only creates record sets (an existing one is never updated or deleted).
	// Empty = the manager's --policy (default sync). Withheld changes are named in Ready's
	// message.
	// +optional
	Policy Policy `json:"policy,omitempty"`
}

// Policy is a DNSEndpoint's spec.policy (external-dns' --policy values sync, upsert-only and
// create-only, spelled as this API spells enums).
// +kubebuilder:validation:Enum=Sync;UpsertOnly;CreateOnly
type Policy string

const (
	// PolicySync writes every change (external-dns' sync).
	PolicySync Policy = "Sync"
	// PolicyUpsertOnly creates and updates, never deletes (external-dns' upsert-only).
	PolicyUpsertOnly Policy = "UpsertOnly"
	// PolicyCreateOnly only creates (external-dns' create-only).
	PolicyCreateOnly Policy = "CreateOnly"
)

// DNSEndpointStatus is what the DNSEndpoint controller observed.
type DNSEndpointStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// PublishingStatus: plan and appliedPlan, shared with DNSRecord.
	PublishingStatus `json:",inline"`

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
// works after changing only its apiVersion. A source (--source) creates one per source object,
// labelled dnsplane.io/source-kind and dnsplane.io/source-name (the Source column, kubectl get -o
// wide). Short name dnsep and category dnsplane tell it apart from external-dns's
// dnsendpoints.externaldns.k8s.io, which has neither (docs/api.md, "Sources").
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dnsep,categories=dnsplane
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].reason`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Plan",type=string,JSONPath=`.status.plan.id`,priority=1
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.metadata.labels.dnsplane\.io/source-kind`,priority=1
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
