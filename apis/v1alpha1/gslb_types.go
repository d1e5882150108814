package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GslbSpec load-balances hosts across clusters (k8gb's model).
//
// +kubebuilder:validation:XValidation:rule="self.resourceRef.kind == 'Ingress' || (has(self.hosts) && size(self.hosts) > 0)",message="hosts is required when resourceRef is a Service"
type GslbSpec struct {
	// ResourceRef is the local Ingress or LoadBalancer Service: its load-balancer addresses are
	// this cluster's targets, and its Services' ready endpoints are their health.
	ResourceRef ResourceReference `json:"resourceRef"`

	// Hosts to load-balance; with an Ingress, the default is the hosts of its rules.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Hosts []string `json:"hosts,omitempty"`

	// ZoneRef names this cluster's DNSZone for the Gslb zone (with linkToParentDomain false).
	ZoneRef ZoneReference `json:"zoneRef"`

	// Edge, when set, publishes this cluster's NS and glue for the Gslb zone in the edge zone.
	// +optional
	Edge *GslbEdge `json:"edge,omitempty"`

	// Strategy chooses the answer for each host.
	// +optional
	// +kubebuilder:default={type: roundRobin, dnsTtlSeconds: 30}
	Strategy GslbStrategy `json:"strategy,omitzero"` // omitzero: a zero strategy is sent as none, not as the type "" the Enum refuses
}

// ResourceReference names an Ingress or Service in the Gslb's namespace.
type ResourceReference struct {
	// Kind is Ingress or Service.
	// +kubebuilder:validation:Enum=Ingress;Service
	Kind ResourceKind `json:"kind"`
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ResourceKind is the kind of object a Gslb's resourceRef names. The allowed values are listed by
// the Enum marker on ResourceReference.Kind.
type ResourceKind string

const (
	// ResourceKindIngress: a networking.k8s.io/v1 Ingress; its rules' hosts are the default hosts.
	ResourceKindIngress ResourceKind = "Ingress"
	// ResourceKindService: a LoadBalancer core/v1 Service; spec.hosts is required.
	ResourceKindService ResourceKind = "Service"
)

// GslbEdge names the edge zone that delegates the Gslb zone to every cluster's name server.
type GslbEdge struct {
	// ZoneRef names the edge DNSZone.
	ZoneRef ZoneReference `json:"zoneRef"`
}

// GslbStrategy chooses the answer for each host.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'failover' || (has(self.primaryGeoTag) && size(self.primaryGeoTag) > 0)",message="failover needs primaryGeoTag"
// +kubebuilder:validation:XValidation:rule="self.type != 'weighted' || (has(self.weights) && size(self.weights) > 0)",message="weighted needs weights"
type GslbStrategy struct {
	// Type is roundRobin (every healthy target), failover (the primary geo tag's targets while
	// it has any) or weighted (a per-query choice by geo tag weight).
	// +kubebuilder:validation:Enum=roundRobin;failover;weighted
	// +kubebuilder:default=roundRobin
	Type GslbStrategyType `json:"type"`

	// PrimaryGeoTag is the geo tag served first under failover.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	PrimaryGeoTag string `json:"primaryGeoTag,omitempty"`

	// Weights by geo tag, under weighted; each 0 to 1000.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Weights map[string]int32 `json:"weights,omitempty"`

	// DNSTTLSeconds is the TTL of the answers, in seconds. Default: 30.
	// +optional
	// +kubebuilder:default=30
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	DNSTTLSeconds int64 `json:"dnsTtlSeconds,omitempty"`
}

// GslbStrategyType is the way a Gslb chooses its answers. The allowed values are listed by the
// Enum marker on GslbStrategy.Type; pkg/gslb computes each.
type GslbStrategyType string

const (
	// GslbRoundRobin serves every healthy target of every cluster.
	GslbRoundRobin GslbStrategyType = "roundRobin"
	// GslbFailover serves the primary geo tag's targets while it has any, else every other's.
	GslbFailover GslbStrategyType = "failover"
	// GslbWeighted chooses per query by geo tag weight.
	GslbWeighted GslbStrategyType = "weighted"
)

// ServiceHealth is the health of one Gslb host in status.serviceHealth.
type ServiceHealth string

const (
	// ServiceHealthy: the host's backends have ready endpoints and the resource has a
	// load-balancer address.
	ServiceHealthy ServiceHealth = "Healthy"
	// ServiceUnhealthy: no ready endpoint, or no load-balancer address.
	ServiceUnhealthy ServiceHealth = "Unhealthy"
	// ServiceNotFound: the resourceRef, or the host's backend, does not exist.
	ServiceNotFound ServiceHealth = "NotFound"
)

// PeerStatus is the last exchange with one peer cluster.
type PeerStatus struct {
	// GeoTag of the peer.
	GeoTag string `json:"geoTag"`
	// Address queried, host:port.
	Address string `json:"address"`
	// LastSeen is the last time the peer answered.
	// +optional
	LastSeen *metav1.Time `json:"lastSeen,omitempty"`
	// Error of the last query, if it failed.
	// +optional
	Error string `json:"error,omitempty"`
}

// GslbStatus is what the Gslb controller observed.
type GslbStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// GeoTag is this cluster's geo tag.
	// +optional
	GeoTag string `json:"geoTag,omitempty"`
	// ServiceHealth per host: Healthy, Unhealthy or NotFound. When the resourceRef is missing its
	// hosts are NotFound (for an Ingress, the hosts last served); when no host is known the key
	// is the resource itself, "<kind>/<name>", NotFound.
	// +optional
	ServiceHealth map[string]ServiceHealth `json:"serviceHealth,omitempty"`
	// HealthyRecords per host: the targets served.
	// +optional
	HealthyRecords map[string][]string `json:"healthyRecords,omitempty"`
	// Peers are the other clusters and their last exchange.
	// +optional
	Peers []PeerStatus `json:"peers,omitempty"`
	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Gslb load-balances hosts across clusters through DNS: every cluster publishes its healthy
// targets, and reads its peers' over DNS, with no credentials crossing clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=gs,categories=dnsplane
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.strategy.type`
// +kubebuilder:printcolumn:name="GeoTag",type=string,JSONPath=`.status.geoTag`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gslb struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GslbSpec   `json:"spec"`
	Status GslbStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GslbList is a list of Gslbs.
type GslbList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gslb `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gslb{}, &GslbList{})
}
