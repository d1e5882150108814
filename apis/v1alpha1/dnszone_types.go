package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSZoneSpec declares one hosted zone, usually a cluster's base domain.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.zoneID) || size(oldSelf.zoneID) == 0 || (has(self.zoneID) && self.zoneID == oldSelf.zoneID)",message="zoneID is immutable once set"
type DNSZoneSpec struct {
	// Zone is the hosted zone's name: a lower-case DNS name without a trailing dot, such as
	// c1.example.com. Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?[.])*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$')",message="zone must be a lower-case DNS name without a trailing dot, such as c1.example.com (letters, digits and hyphens; labels of 1 to 63 characters)"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="zone is immutable"
	Zone string `json:"zone"`

	// ProviderRef names the Secret, in this namespace, whose type selects the provider and whose
	// keys hold its settings and credentials.
	ProviderRef SecretReference `json:"providerRef"`

	// ZoneID, when set, adopts an existing hosted zone instead of creating one. Adopted zones are
	// never deleted. Immutable once set.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	ZoneID string `json:"zoneID,omitempty"`

	// LinkToParentDomain publishes this zone's NS delegation in its parent DNSZone.
	// +optional
	LinkToParentDomain bool `json:"linkToParentDomain,omitempty"`

	// ParentRef names the parent DNSZone. The default is the DNSZone, in any namespace, whose zone
	// is the longest proper suffix of this one (this namespace wins a tie). Linking is allowed only
	// if the parent is in this namespace or lists it in delegation.allowedNamespaces.
	// +optional
	ParentRef *ZoneReference `json:"parentRef,omitempty"`

	// Delegation says who may link child zones, or publish NS, DS and glue, under this zone.
	// Another namespace's DNSZone inside this zone is served only when its namespace is listed
	// (docs/api.md, "Tenancy").
	// +optional
	Delegation *Delegation `json:"delegation,omitempty"`

	// Sharing says which other namespaces' DNSZones may adopt this DNSZone's hosted zone (the
	// same zone at the same provider account) and publish into it. The default is none: such a
	// DNSZone gets ZoneConflict (docs/api.md, "Tenancy").
	// +optional
	Sharing *Sharing `json:"sharing,omitempty"`

	// PreserveOnDelete keeps the hosted zone, its records and its parent link when the DNSZone is
	// deleted; only the finalizer goes.
	// +optional
	PreserveOnDelete bool `json:"preserveOnDelete,omitempty"`

	// Tags are set on the hosted zone where the provider has tags.
	// +optional
	// +kubebuilder:validation:MaxProperties=40
	Tags map[string]string `json:"tags,omitempty"`

	// DynamicUpdates binds TSIG keys (Secrets of type dnsplane.io/tsig in this namespace) to
	// the names and types they may change in this zone with RFC 2136 UPDATE messages sent to
	// the embedded DNS server's address, whatever the zone's provider (docs/certificates.md).
	// At most 16 bindings, one per Secret.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.keySecretRef.name == a.keySecretRef.name))",message="each keySecretRef may be bound once per DNSZone"
	DynamicUpdates []DynamicUpdate `json:"dynamicUpdates,omitempty"`

	// DNSSEC signs the zone where its provider signs (docs/dnssec.md); absent or enabled:
	// false leaves it unsigned.
	// +optional
	DNSSEC *DNSSEC `json:"dnssec,omitempty"`
}

// DynamicUpdate lets the TSIG key of one Secret change some names and types of the zone
// through RFC 2136 UPDATE messages (docs/api.md, "Dynamic updates").
type DynamicUpdate struct {
	// KeySecretRef names the Secret, of type dnsplane.io/tsig in this namespace, that holds the
	// key: its keys name (the TSIG key name), algorithm (hmac-sha256, hmac-sha512, hmac-sha1,
	// hmac-sha224, hmac-sha384 or hmac-md5) and secret (base64, as BIND's tsig-keygen writes
	// it).
	KeySecretRef SecretReference `json:"keySecretRef"`

	// Names are the owner names the key may change, as patterns relative to the zone: labels
	// separated by dots, "@" alone for the apex; a "*" label matches exactly one label, except
	// a last "*", which matches any number of labels, none included. Letters compare without
	// case. Default: ["_acme-challenge.*"], the ACME DNS-01 names (RFC 8555 §8.4) of the apex
	// and of every name below it.
	// +optional
	// +kubebuilder:default={"_acme-challenge.*"}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(@|([*]|[a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?)([.]([*]|[a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?))*)$`
	// +listType=set
	Names []string `json:"names,omitempty"`

	// Types are the record types the key may change. Default: [TXT].
	// +optional
	// +kubebuilder:default={TXT}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	Types []DynamicUpdateType `json:"types,omitempty"`
}

// DynamicUpdateType is a record type a dynamic-update key may change: one a DNSEndpoint can
// publish, delegation types (NS, DS) excepted.
// +kubebuilder:validation:Enum=A;AAAA;CNAME;TXT;MX;SRV;CAA;PTR
type DynamicUpdateType string

// Delegation lists the namespaces that may use a zone besides its own.
type Delegation struct {
	// AllowedNamespaces may link child zones under this zone; the default is none beyond the
	// zone's own namespace.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// Sharing lists the namespaces whose DNSZones may hold the same hosted zone as this one.
type Sharing struct {
	// AllowedNamespaces may adopt this DNSZone's hosted zone with a DNSZone of their own; the
	// default is none beyond the zone's own namespace.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
}

// DNSZoneStatus is what the DNSZone controller observed.
type DNSZoneStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ZoneID is the provider's identifier of the hosted zone.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`

	// NameServers are the hosted zone's name servers, the NS set its parent must delegate to.
	// +optional
	NameServers []string `json:"nameServers,omitempty"`

	// LastSyncGeneration is the generation of the last successful sync with the provider.
	// +optional
	LastSyncGeneration int64 `json:"lastSyncGeneration,omitempty"`

	// LastSyncTimestamp is the time of the last successful sync with the provider.
	// +optional
	LastSyncTimestamp *metav1.Time `json:"lastSyncTimestamp,omitempty"`

	// AvailableTimestamp is when the zone first answered SOA authoritatively; the metric
	// dnsplane_dnszone_available_delay_seconds is observed once, when it is set.
	// +optional
	AvailableTimestamp *metav1.Time `json:"availableTimestamp,omitempty"`

	// Servers are the zone's authoritative name servers as the Served check last asked them,
	// the primary first (docs/served.md): a server that follows its primary by name alone, one
	// behind with the serial it answers and since when, one that answered no SOA with why.
	// Empty when the zone's provider has no name servers to check.
	// +optional
	// +listType=map
	// +listMapKey=server
	// +kubebuilder:validation:MaxItems=64
	Servers []ZoneServer `json:"servers,omitempty"`

	// DNSSEC is the zone's keys, DS set and rollover, with spec.dnssec enabled.
	// +optional
	DNSSEC *DNSSECStatus `json:"dnssec,omitempty"`

	// Conditions: ZoneAvailable, ParentLinkCreated, Served, Ready, Secure (with spec.dnssec)
	// and, with spec.dynamicUpdates, DynamicUpdatesReady.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ZoneServer is one authoritative name server of a zone, as the Served check last saw it.
type ZoneServer struct {
	// Server is host:port.
	Server string `json:"server"`
	// Serial is the zone's SOA serial it answered while behind the primary's; absent while it
	// follows (its serial is then the primary's) or answers none.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	Serial *int64 `json:"serial,omitempty"`
	// BehindSince is when it was first seen answering a serial below the primary's, since it
	// last answered the primary's; absent while it follows.
	// +optional
	BehindSince *metav1.Time `json:"behindSince,omitempty"`
	// Error is why it answered no SOA at the last check.
	// +optional
	Error string `json:"error,omitempty"`
}

// DNSZone is one hosted zone at a DNS provider, usually a cluster's base domain, optionally
// delegated from its parent zone.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dz,categories=dnsplane
// +kubebuilder:printcolumn:name="Zone",type=string,JSONPath=`.spec.zone`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="ZoneAvailable",type=string,JSONPath=`.status.conditions[?(@.type=="ZoneAvailable")].status`
// +kubebuilder:printcolumn:name="ParentLink",type=string,JSONPath=`.status.conditions[?(@.type=="ParentLinkCreated")].reason`
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].reason`
// +kubebuilder:printcolumn:name="Secure",type=string,JSONPath=`.status.conditions[?(@.type=="Secure")].reason`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Keys",type=string,JSONPath=`.spec.dnssec.keys.source`,priority=1
// +kubebuilder:printcolumn:name="ZoneID",type=string,JSONPath=`.status.zoneID`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNSZone struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DNSZoneSpec   `json:"spec"`
	Status DNSZoneStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSZoneList is a list of DNSZones.
type DNSZoneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSZone `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DNSZone{}, &DNSZoneList{})
}
