package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSRecordSpec is one contributor's part of record sets shared by many clusters.
//
// +kubebuilder:validation:XValidation:rule="!has(self.endpoints) || self.endpoints.all(e, e.dnsName.lowerAscii() in [self.rootHost, self.rootHost + '.'] || e.dnsName.lowerAscii().endsWith('.' + self.rootHost) || e.dnsName.lowerAscii().endsWith('.' + self.rootHost + '.'))",message="every endpoint's dnsName must be rootHost or a name below it"
type DNSRecordSpec struct {
	// RootHost is the host these record sets serve, such as app.example.com: a lower-case DNS
	// name without a trailing dot. Its registry record carries each contributor's heartbeat.
	// Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9_]([-a-z0-9_]{0,61}[a-z0-9_])?[.])*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')",message="rootHost must be a lower-case DNS name without a trailing dot, such as app.example.com"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="rootHost is immutable"
	RootHost string `json:"rootHost"`

	// PublishingSpec: endpoints (each dnsName is rootHost or below it), zoneRef, strategy (DryRun
	// and Disabled records do not heartbeat) and approvedPlan, shared with DNSEndpoint.
	PublishingSpec `json:",inline"`
}

// OwnerStatus is one contributor to a DNSRecord's rootHost, as read from the TXT registry.
type OwnerStatus struct {
	// OwnerID is the contributing manager's --owner-id.
	OwnerID string `json:"ownerID"`
	// Resource is the contributing object, kind/namespace/name.
	Resource string `json:"resource"`
	// LastHeartbeat is the contributor's last heartbeat; absent means never.
	// +optional
	LastHeartbeat *metav1.Time `json:"lastHeartbeat,omitempty"`
	// Healthy is false when the heartbeat is missing or older than --heartbeat-threshold.
	Healthy bool `json:"healthy"`
}

// DNSRecordStatus is what the DNSRecord controller observed.
type DNSRecordStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// OwnerID is this manager's owner ID.
	// +optional
	OwnerID string `json:"ownerID,omitempty"`

	// Owners lists every contributor to rootHost.
	// +optional
	Owners []OwnerStatus `json:"owners,omitempty"`

	// PublishingStatus: plan and appliedPlan, shared with DNSEndpoint.
	PublishingStatus `json:",inline"`

	// Zones are the DNSZones, as namespace/name, that hold this contributor's records; see
	// DNSEndpointStatus.Zones.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	Zones []string `json:"zones,omitempty"`

	// Conditions: Ready and Healthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DNSRecord contributes endpoints to record sets that many clusters share: the targets of every
// contributor merge, and each contributor's heartbeat shows whether it is still reconciling.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dnsrec,categories=dnsplane
// +kubebuilder:printcolumn:name="RootHost",type=string,JSONPath=`.spec.rootHost`
// +kubebuilder:printcolumn:name="Owner",type=string,JSONPath=`.status.ownerID`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.conditions[?(@.type=="Healthy")].status`
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].reason`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNSRecord struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSRecordSpec   `json:"spec"`
	Status DNSRecordStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSRecordList is a list of DNSRecords.
type DNSRecordList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSRecord `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DNSRecord{}, &DNSRecordList{})
}
