package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Size bounds of the Endpoint type. They keep every object small enough for etcd and every CEL
// rule inside the API server's static cost budget (k8s.io/apiextensions-apiserver: 10^7 per
// expression, multiplied by the list sizes that enclose it). docs/api.md lists them for users.
const (
	// MaxEndpoints is the most endpoints one DNSEndpoint or DNSRecord holds.
	MaxEndpoints = 128
	// MaxTargets is the most targets one endpoint holds.
	MaxTargets = 32
)

// DefaultTTL is the TTL, in seconds, that the DNSEndpoint and DNSRecord controllers publish an
// endpoint with when its recordTTL is 0 (an alias excepted: it has no TTL of its own).
const DefaultTTL = 300

// Endpoint's admission checks each target's shape for its record type in one rule, not one rule per type:
// the API server reads a field of an endpoint by copying the endpoint's whole schema
// (k8s.io/apiextensions-apiserver, cel/model.Structural.Properties), so each rule that reads
// recordType cost every create, update and status write of the object that copy per endpoint.
// One rule reads recordType once for an A record (nine rules read it nine times); its message is
// the failing type's own (messageExpression, evaluated only on a refusal). A DS digest's hex
// digits are a second rule: both of its regular expressions in one exceed the rule's static cost
// budget.

// Endpoint is one record set to publish. Its field names and meaning are external-dns' own
// (sigs.k8s.io/external-dns/endpoint.Endpoint), so an external-dns DNSEndpoint works after changing
// only its apiVersion.
//
// +kubebuilder:validation:XValidation:rule="!has(self.targets) ? self.recordType != 'CNAME' : self.recordType == 'A' ? self.targets.all(t, isIP(t) && ip(t).family() == 4) : self.recordType == 'AAAA' ? self.targets.all(t, isIP(t) && ip(t).family() == 6) : self.recordType in ['CNAME', 'NS', 'PTR'] ? (self.recordType != 'CNAME' || size(self.targets) == 1) && self.targets.all(t, t.matches('^[a-zA-Z0-9_.-]+$')) : self.recordType == 'MX' ? self.targets.all(t, t.matches('^[0-9]+ [^ ]+$')) : self.recordType == 'SRV' ? self.targets.all(t, t.matches('^([0-9]+ ){3}[^ ]+$')) : self.recordType == 'CAA' ? self.targets.all(t, t.matches('^[0-9]+ [^ ]+ .')) : self.recordType != 'DS' || self.targets.all(t, t.matches('^([0-9]+ ){3}(..)+$'))",messageExpression="self.recordType == 'A' ? 'every target of an A record must be an IPv4 address' : self.recordType == 'AAAA' ? 'every target of an AAAA record must be an IPv6 address' : self.recordType == 'CNAME' && (!has(self.targets) || size(self.targets) != 1) ? 'a CNAME record has exactly one target (RFC 1034 §3.6.2)' : self.recordType in ['CNAME', 'NS', 'PTR'] ? 'every target of a CNAME, NS or PTR record must be a host name' : self.recordType == 'MX' ? \"every target of an MX record must be '<preference> <host>', e.g. '10 mail.example.com'\" : self.recordType == 'SRV' ? \"every target of an SRV record must be '<priority> <weight> <port> <host>', e.g. '0 5 5060 sip.example.com'\" : self.recordType == 'CAA' ? \"every target of a CAA record must be '<flags> <tag> <value>', e.g. '0 issue \\\"letsencrypt.org\\\"'\" : \"every target of a DS record must be '<key tag> <algorithm> <digest type> <digest>' with the digest in hex, two digits per byte (RFC 4034 §5.3), e.g. '12345 13 2 3d6f...'\""
// +kubebuilder:validation:XValidation:rule="self.recordType != 'DS' || !has(self.targets) || self.targets.all(t, !t.matches('[^0-9a-fA-F ]'))",message="every target of a DS record must be '<key tag> <algorithm> <digest type> <digest>' with the digest in hex, two digits per byte (RFC 4034 §5.3), e.g. '12345 13 2 3d6f...'"
type Endpoint struct {
	// DNSName is the record set's owner name, a host name such as www.example.com, optionally
	// starting with "*." for a wildcard; a trailing dot is accepted and ignored.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:XValidation:rule="self.matches('^([*][.])?([a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?[.])*[a-zA-Z0-9_]([-a-zA-Z0-9_]{0,61}[a-zA-Z0-9_])?[.]?$')",message="dnsName must be a DNS name such as www.example.com or *.example.com, with labels of at most 63 characters"
	DNSName string `json:"dnsName"`

	// Targets are the record set's values in presentation format: addresses for A and AAAA, host
	// names for CNAME, NS and PTR, "<preference> <host>" for MX, "<priority> <weight> <port>
	// <host>" for SRV, "<flags> <tag> <value>" for CAA, "<key tag> <algorithm> <digest type>
	// <hex digest>" for DS, and the plain text for TXT. At most 32 targets of at most 1024 bytes
	// each. Admission checks each type's shape cheaply (CEL's cost budget); the controller parses
	// every target with miekg/dns, checks that it packs into wire format (and a DS digest's
	// length for its digest type), and reports InvalidEndpoint for one that does not.
	// +optional
	Targets Targets `json:"targets,omitempty"`

	// RecordType is the record set's type.
	// +kubebuilder:validation:Enum=A;AAAA;CNAME;TXT;NS;MX;SRV;CAA;PTR;DS
	RecordType string `json:"recordType"`

	// SetIdentifier tells apart record sets of the same name and type, for weighted or
	// geo routing (Route 53's set identifier).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SetIdentifier string `json:"setIdentifier,omitempty"`

	// RecordTTL is the TTL in seconds. Default: 0, which publishes 300 s (the DNSEndpoint and
	// DNSRecord controllers' default; 0 is kept in the object so that a source's endpoint stays
	// as written). RFC 2181 §8 caps TTLs at 2^31-1.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	RecordTTL TTL `json:"recordTTL,omitempty"`

	// Labels are free-form labels on the endpoint, kept for external-dns compatibility.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels Labels `json:"labels,omitempty"`

	// ProviderSpecific holds provider options with external-dns' names, for example
	// aws/evaluate-target-health, alias, aws/weight.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	ProviderSpecific ProviderSpecific `json:"providerSpecific,omitempty"`
}

// Targets is a list of record values in presentation format; at most MaxTargets of at most
// 1024 bytes each (TXT values longer than 255 bytes are split into character-strings by the
// provider, RFC 1035 §3.3.14).
// +kubebuilder:validation:MaxItems=32
// +kubebuilder:validation:items:MaxLength=1024
type Targets []string

// TTL is a time to live in seconds.
type TTL int64

// Labels are free-form key/value labels on an endpoint.
type Labels map[string]string

// ProviderSpecificProperty is one provider option, external-dns style.
type ProviderSpecificProperty struct {
	// Name of the option, e.g. aws/evaluate-target-health.
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name,omitempty"`
	// Value of the option.
	// +kubebuilder:validation:MaxLength=1024
	Value string `json:"value,omitempty"`
}

// ProviderSpecific is a list of provider options.
type ProviderSpecific []ProviderSpecificProperty

// SecretReference names a Secret in the referring object's own namespace. There are no
// cross-namespace Secret references.
type SecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ZoneReference names a DNSZone, in the referring object's namespace unless Namespace is set.
type ZoneReference struct {
	// Name of the DNSZone.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Namespace of the DNSZone; empty means the referring object's namespace. Another namespace's
	// zone is usable only when it lists this namespace in delegation.allowedNamespaces.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// PublishingSpec is the part of a DNSEndpoint's and a DNSRecord's spec that says what to publish
// and how. Both specs embed it inline, so its fields sit directly under spec on the wire.
type PublishingSpec struct {
	// Endpoints to publish; at most 128. In a DNSRecord each dnsName is rootHost or below it.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	// ZoneRef names the DNSZone to publish into. Without it, each endpoint goes to the DNSZone in
	// this namespace whose zone is the longest suffix of its dnsName.
	// +optional
	ZoneRef *ZoneReference `json:"zoneRef,omitempty"`

	// Strategy is FullSync (apply every plan), DryRun (only plan) or Disabled. DryRun and
	// Disabled DNSRecords do not heartbeat. Default: FullSync.
	// +optional
	// +kubebuilder:default=FullSync
	Strategy Strategy `json:"strategy,omitempty"`

	// ApprovedPlan, under DryRun, applies the plan whose ID equals it, once.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ApprovedPlan string `json:"approvedPlan,omitempty"`
}

// PublishingStatus is the part of a DNSEndpoint's and a DNSRecord's status that the shared
// publishing code maintains (controllers/internal/publish). Both statuses embed it inline.
// status.zones is not part of it: a DNSRecord caps it at 128 items and a DNSEndpoint does not, so
// each kind keeps its own field (Publisher.HeldZones).
type PublishingStatus struct {
	// Plan is what remains to be written: under DryRun the pending changes; after an apply
	// (FullSync, or an approved plan) empty, or the changes of the zones a failed apply did not
	// reach. Updates show the targets and TTL they replace.
	// +optional
	Plan *Plan `json:"plan,omitempty"`

	// AppliedPlan is the ID of the last plan applied through spec.approvedPlan under DryRun.
	// +optional
	AppliedPlan string `json:"appliedPlan,omitempty"`

	// Served is, per zone whose name servers report serials that the object holds records in,
	// or left and whose removal is not served yet, the serial that carries its last change
	// there and how far that change got: the Served condition's detail (docs/served.md).
	// +optional
	// +listType=map
	// +listMapKey=dnsZone
	// +kubebuilder:validation:MaxItems=128
	Served []ServedZone `json:"served,omitempty"`
}

// ServedZone is how far an object's last change in one zone got.
type ServedZone struct {
	// DNSZone is the DNSZone, as namespace/name.
	DNSZone string `json:"dnsZone"`
	// Zone is the zone's name.
	Zone string `json:"zone"`
	// Serial is the primary name server's SOA serial read after the change was written: the
	// serial that carries it (RFC 1982 arithmetic: any later serial carries it too).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4294967295
	Serial int64 `json:"serial"`
	// WrittenAt is when the provider acknowledged the change.
	WrittenAt metav1.MicroTime `json:"writtenAt"`
	// ServedAt is when every name server was first seen answering Serial or a later one.
	// +optional
	ServedAt *metav1.MicroTime `json:"servedAt,omitempty"`
	// Slowest is the name server (host:port) that reached Serial last, once served.
	// +optional
	Slowest string `json:"slowest,omitempty"`
	// SerialUnknown: the primary gave no SOA serial after the change was written, so Serial
	// (0) carries nothing; the serial is read again at the next reconcile.
	// +optional
	SerialUnknown bool `json:"serialUnknown,omitempty"`
}

// Strategy says what a DNSEndpoint or DNSRecord does with its plan.
// +kubebuilder:validation:Enum=FullSync;DryRun;Disabled
type Strategy string

const (
	// StrategyFullSync applies every plan at once.
	StrategyFullSync Strategy = "FullSync"
	// StrategyDryRun only records the plan in status; spec.approvedPlan applies it once.
	StrategyDryRun Strategy = "DryRun"
	// StrategyDisabled neither plans nor writes.
	StrategyDisabled Strategy = "Disabled"
)

// MaxPlanChanges is the most changes a status plan lists; the counts cover all of them.
const MaxPlanChanges = 100

// Plan is the set of changes that would bring the provider to the object's spec: what remains to
// be written. Under DryRun these are the pending changes; once a plan is applied (FullSync, or an
// approved DryRun plan) it is empty, with counts of zero.
type Plan struct {
	// ID is a hash of the planned changes and of the spec without approvedPlan. Copy it into
	// spec.approvedPlan to apply this plan once under DryRun.
	ID string `json:"id"`
	// Changes lists the first 100 planned changes.
	// +optional
	Changes []PlanChange `json:"changes,omitempty"`
	// Counts counts every planned change by action.
	Counts PlanCounts `json:"counts"`
}

// PlanChange is one planned change of one record set.
type PlanChange struct {
	// Action is Create, Update or Delete.
	Action string `json:"action"`
	// DNSName of the record set.
	DNSName string `json:"dnsName"`
	// RecordType of the record set.
	RecordType string `json:"recordType"`
	// SetIdentifier of the record set, if any.
	// +optional
	SetIdentifier string `json:"setIdentifier,omitempty"`
	// Targets after the change (before it, for Delete).
	// +optional
	Targets []string `json:"targets,omitempty"`
	// TTL after the change, in seconds.
	// +optional
	TTL int64 `json:"ttl,omitempty"`
	// OldTargets are the targets an Update replaces (empty for Create and Delete).
	// +optional
	OldTargets []string `json:"oldTargets,omitempty"`
	// OldTTL is the TTL, in seconds, an Update replaces (0 for Create and Delete).
	// +optional
	OldTTL int64 `json:"oldTTL,omitempty"`
}

// PlanCounts counts planned changes by action.
type PlanCounts struct {
	Create int32 `json:"create"`
	Update int32 `json:"update"`
	Delete int32 `json:"delete"`
}
