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

	// HealthCheck, when set, probes every target from every cluster and takes a target out of
	// the answers only when a majority of the clusters with a fresh verdict call it down
	// (docs/design.md, "Health and partitions"). Without it, health is readiness alone: ready
	// endpoints and a load-balancer address.
	// +optional
	HealthCheck *GslbHealthCheck `json:"healthCheck,omitempty"`
}

// GslbHealthCheck is how every cluster probes every target of a Gslb. Each IPv4 and
// IPv6 target is probed on its own, at the target's address and Port.
//
// +kubebuilder:validation:XValidation:rule="self.protocol != 'TCP' || !has(self.path)",message="path is only for protocol HTTP or HTTPS"
// +kubebuilder:validation:XValidation:rule="self.protocol != 'TCP' || !has(self.expectedStatus)",message="expectedStatus is only for protocol HTTP or HTTPS"
// +kubebuilder:validation:XValidation:rule="self.protocol != 'TCP' || !has(self.host)",message="host is only for protocol HTTP or HTTPS"
// +kubebuilder:validation:XValidation:rule="self.protocol == 'HTTPS' || !has(self.insecureSkipVerify) || !self.insecureSkipVerify",message="insecureSkipVerify is only for protocol HTTPS"
// +kubebuilder:validation:XValidation:rule="!has(self.timeoutSeconds) || !has(self.intervalSeconds) || self.timeoutSeconds <= self.intervalSeconds",message="timeoutSeconds must not exceed intervalSeconds (a target's next probe starts only after the last one ended)"
type GslbHealthCheck struct {
	// Protocol is HTTP or HTTPS (a GET of Path, passed when the status is in ExpectedStatus) or
	// TCP (passed when a connection opens).
	// +optional
	// +kubebuilder:validation:Enum=HTTP;HTTPS;TCP
	// +kubebuilder:default=HTTP
	Protocol HealthCheckProtocol `json:"protocol,omitempty"`

	// Port is the target's port to probe, 1 to 65535.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Path is the HTTP(S) request path, starting with "/". Default: "/".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[!-~]*$`
	Path string `json:"path,omitempty"`

	// Host is the HTTP Host header and the TLS server name (SNI, and the name the certificate
	// must be valid for). Default: the Gslb host whose targets are probed.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Host string `json:"host,omitempty"`

	// ExpectedStatus lists the HTTP status codes that pass: codes ("200") or inclusive ranges
	// ("200-399"), from 100 to 599. Default: ["200-399"]. Redirects are not followed.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=7
	// +kubebuilder:validation:items:Pattern=`^[1-5][0-9][0-9](-[1-5][0-9][0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.size() != 7 || s.substring(0, 3) <= s.substring(4, 7))",message="an expectedStatus range must be low-high with low <= high"
	ExpectedStatus []string `json:"expectedStatus,omitempty"`

	// IntervalSeconds between two probes of one target from one cluster (plus up to 10% jitter).
	// +optional
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	IntervalSeconds int32 `json:"intervalSeconds,omitempty"`

	// TimeoutSeconds bounds one probe: connect, TLS handshake, request and status line. At most
	// IntervalSeconds.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// FailureThreshold is how many consecutive failed probes make one cluster call a target
	// down.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`

	// SuccessThreshold is how many consecutive passed probes make one cluster call a target up
	// again.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	SuccessThreshold int32 `json:"successThreshold,omitempty"`

	// InsecureSkipVerify accepts any certificate (HTTPS only).
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`

	// IsolationHoldSeconds is how long a cluster that hears fresh verdicts from at most half of
	// the members (itself included) serves the last agreed answer before afterIsolationHold
	// applies. 0 applies it at once.
	// +optional
	// +kubebuilder:default=300
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	IsolationHoldSeconds *int32 `json:"isolationHoldSeconds,omitempty"`

	// AfterIsolationHold is what an isolated cluster (one that hears fresh verdicts from at
	// most half of the members, itself included) does once isolationHoldSeconds have passed:
	// Hold keeps every last agreed decision for as long as the isolation lasts (no cluster
	// ever fails over alone); OwnProbes decides by this cluster's own probes alone (each side
	// of a split may then answer differently).
	// +optional
	// +kubebuilder:validation:Enum=Hold;OwnProbes
	// +kubebuilder:default=Hold
	AfterIsolationHold AfterIsolationHold `json:"afterIsolationHold,omitempty"`
}

// AfterIsolationHold is spec.healthCheck.afterIsolationHold. The allowed values are listed by
// the Enum marker on GslbHealthCheck.AfterIsolationHold.
type AfterIsolationHold string

const (
	// AfterIsolationHoldHold keeps the last agreed decisions for as long as the isolation lasts.
	AfterIsolationHoldHold AfterIsolationHold = "Hold"
	// AfterIsolationHoldOwnProbes decides by the cluster's own probes alone after the hold.
	AfterIsolationHoldOwnProbes AfterIsolationHold = "OwnProbes"
)

// HealthCheckProtocol is how a Gslb probes its targets. The allowed values are listed by the
// Enum marker on GslbHealthCheck.Protocol.
type HealthCheckProtocol string

const (
	// HealthCheckHTTP: an HTTP/1.1 GET of path; passes when the status is expected.
	HealthCheckHTTP HealthCheckProtocol = "HTTP"
	// HealthCheckHTTPS: the same over TLS, with host as the server name.
	HealthCheckHTTPS HealthCheckProtocol = "HTTPS"
	// HealthCheckTCP: passes when a TCP connection to the port opens.
	HealthCheckTCP HealthCheckProtocol = "TCP"
)

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
// +kubebuilder:validation:XValidation:rule="self.type != 'geo' || (has(self.geoRegions) && size(self.geoRegions) > 0)",message="geo needs geoRegions"
// +kubebuilder:validation:XValidation:rule="self.type != 'geo' || (has(self.defaultGeoTag) && size(self.defaultGeoTag) > 0)",message="geo needs defaultGeoTag"
// +kubebuilder:validation:XValidation:rule="self.type == 'geo' || (!has(self.geoRegions) && !has(self.defaultGeoTag))",message="geoRegions and defaultGeoTag are only for type geo"
type GslbStrategy struct {
	// Type is roundRobin (every healthy target), failover (the primary geo tag's targets while
	// it has any), weighted (a per-query choice by geo tag weight) or geo (a per-query choice
	// by the client's subnet: docs/design.md, "Geo answers").
	// +kubebuilder:validation:Enum=roundRobin;failover;weighted;geo
	// +kubebuilder:default=roundRobin
	Type GslbStrategyType `json:"type"`

	// PrimaryGeoTag is the geo tag served first under failover. Geo tags are lower case.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[^A-Z]*$`
	PrimaryGeoTag string `json:"primaryGeoTag,omitempty"`

	// Weights by geo tag, under weighted; each 0 to 1000. Geo tags are lower case.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 63 && !k.matches('[A-Z]'))",message="a weights key is a geo tag: lower case, at most 63 characters"
	Weights map[string]int32 `json:"weights,omitempty"`

	// GeoRegions maps a region to the geo tag whose targets answer its clients, under geo. A
	// region is an ISO 3166-1 alpha-2 country code ("DE"), a continent code as MaxMind writes
	// it, prefixed ("continent:EU"; one of AF AN AS EU NA OC SA), or a CIDR in canonical form
	// (host bits zero, lower case: "203.0.113.0/24", "2001:db8::/32"). The most specific match
	// wins: the longest CIDR, then the country, then the continent. Country and continent come
	// from the manager's --geoip-database.
	// +optional
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[A-Z][A-Z]$') || k.matches('^continent:(AF|AN|AS|EU|NA|OC|SA)$') || (size(k) <= 43 && k.matches('^[0-9a-f.:]+/[0-9]+$') && isCIDR(k) && string(cidr(k).masked()) == k))",message="a geoRegions key must be an ISO 3166-1 alpha-2 country code (DE), continent:XX with XX one of AF AN AS EU NA OC SA, or a canonical CIDR (203.0.113.0/24, 2001:db8::/32)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) >= 1 && size(self[k]) <= 63)",message="a geoRegions value is a geo tag of 1 to 63 characters"
	GeoRegions map[string]string `json:"geoRegions,omitempty"`

	// DefaultGeoTag answers the clients that match no region, under geo, and is the first
	// fallback of a region whose geo tag has no healthy target. Geo tags are lower case.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[^A-Z]*$`
	DefaultGeoTag string `json:"defaultGeoTag,omitempty"`

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
	// GslbGeo chooses per query by the client's subnet: its region's geo tag, then the
	// fallback order (docs/design.md, "Geo answers").
	GslbGeo GslbStrategyType = "geo"
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
	// Role is Member (a cluster of the fleet: --ext-gslb-clusters, or the edge NS set as last
	// read) or Witness (--ext-gslb-witnesses: a member that probes and votes and owns no
	// targets). Both count in the membership.
	// +optional
	Role PeerRole `json:"role,omitempty"`
	// Targets are the peer's localtargets as last read, per host: its candidates while it is
	// silent, kept across a manager restart.
	// +optional
	// +listType=map
	// +listMapKey=host
	// +kubebuilder:validation:MaxItems=256
	Targets []PeerHostTargets `json:"targets,omitempty"`
	// ClockOffset, when set, is how far the member's verdict record time is off this
	// cluster's clock, beyond the skew tolerated (e.g. "-2m0s": its clock is behind); its record
	// still counts once its time advances (docs/design.md, "Health and partitions").
	// +optional
	ClockOffset string `json:"clockOffset,omitempty"`
}

// PeerRole is a peer's role in a Gslb's membership.
// +kubebuilder:validation:Enum=Member;Witness
type PeerRole string

const (
	// PeerRoleMember: a cluster of the fleet, with targets of its own.
	PeerRoleMember PeerRole = "Member"
	// PeerRoleWitness: a manager run with --gslb-witness: it probes and votes, owns no target
	// and serves no answer.
	PeerRoleWitness PeerRole = "Witness"
)

// PeerHostTargets are one peer's targets for one host, as last read from its
// localtargets-<host>.
type PeerHostTargets struct {
	// Host is the Gslb host.
	Host string `json:"host"`
	// Targets are the addresses, canonical: at most MaxPeerHostTargets, as many as one
	// localtargets answer holds (64 A and 64 AAAA records).
	// +optional
	// +kubebuilder:validation:MaxItems=128
	Targets []string `json:"targets,omitempty"`
}

// MaxPeerHostTargets bounds PeerHostTargets.Targets: a peer's localtargets answer is read as
// one A and one AAAA question of at most 64 records each (the Querier's answer limit).
const MaxPeerHostTargets = 128

// TargetVerdict is one cluster's view of one target's health.
type TargetVerdict string

const (
	// VerdictUp: the cluster's last successThreshold probes passed (or, for a decision, no
	// majority of the fresh verdicts calls the target down).
	VerdictUp TargetVerdict = "Up"
	// VerdictDown: the cluster's last failureThreshold probes failed (or, for a decision, a
	// majority of the fresh verdicts calls the target down).
	VerdictDown TargetVerdict = "Down"
	// VerdictUnknown: too few probes yet to say.
	VerdictUnknown TargetVerdict = "Unknown"
)

// TargetFamily is a target's address family.
type TargetFamily string

const (
	// FamilyIPv4: an A target.
	FamilyIPv4 TargetFamily = "IPv4"
	// FamilyIPv6: an AAAA target.
	FamilyIPv6 TargetFamily = "IPv6"
)

// LocalProbeStatus is this cluster's probe state for one target.
type LocalProbeStatus struct {
	// Verdict is Up, Down or Unknown (fewer probes than a threshold so far).
	Verdict TargetVerdict `json:"verdict"`
	// LastError of the last failed probe, in words ("HTTP 503", "connect: connection refused",
	// "timeout after 2s"); empty once a probe passes.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	LastError string `json:"lastError,omitempty"`
	// LastProbeTime is when the last probe ended.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
}

// PeerTargetVerdict is one peer cluster's fresh verdict for a target, as read from its verdict
// record (docs/api.md, "Health verdicts").
type PeerTargetVerdict struct {
	// GeoTag of the peer.
	GeoTag string `json:"geoTag"`
	// Verdict is Up or Down.
	Verdict TargetVerdict `json:"verdict"`
}

// GslbTargetStatus is one target of one host: what this cluster probed, what its peers say, and
// what was decided.
type GslbTargetStatus struct {
	// Host is the Gslb host.
	Host string `json:"host"`
	// Target is the address, canonical (netip).
	Target string `json:"target"`
	// Family is IPv4 or IPv6.
	Family TargetFamily `json:"family"`
	// GeoTag of the cluster whose target it is.
	// +optional
	GeoTag string `json:"geoTag,omitempty"`
	// Local is this cluster's probe state.
	// +optional
	Local *LocalProbeStatus `json:"local,omitempty"`
	// Peers are the fresh verdicts of the peers, by geo tag.
	// +optional
	Peers []PeerTargetVerdict `json:"peers,omitempty"`
	// Decision is Up or Down: the agreed health of the target.
	Decision TargetVerdict `json:"decision"`
	// Agreed is the target's last decision taken while this cluster was not isolated (Up or
	// Down): what an isolated cluster holds, restored after a manager restart.
	// +optional
	Agreed TargetVerdict `json:"agreed,omitempty"`
	// Reason for the decision: Healthy, NotProbed, QuorumDown, HeldWhileIsolated,
	// OwnProbesOnly (see the TargetReason constants in conditions.go).
	Reason string `json:"reason"`
	// Served: the target is in the host's answer (after the strategy, and the rule that an
	// answer is never empty).
	Served bool `json:"served"`
	// IsolatedSince is when this cluster became isolated for the host, while it is: the
	// isolation hold counts from it, and a restarted manager restores it.
	// +optional
	IsolatedSince *metav1.Time `json:"isolatedSince,omitempty"`
	// Flap is the target's flap damping state while it has gone Down within the flap window: a
	// restarted manager restores it and damps the target as the other members still do.
	// +optional
	Flap *TargetFlapStatus `json:"flap,omitempty"`
}

// TargetFlapStatus is one target's flap damping state.
type TargetFlapStatus struct {
	// Downs are the times the agreed decision went from Up to Down within the flap window, the
	// newest MaxFlapDowns of them.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Downs []metav1.Time `json:"downs,omitempty"`
	// UpSince is when the quorum started saying Up again while the target is damped.
	// +optional
	UpSince *metav1.Time `json:"upSince,omitempty"`
}

// MaxFlapDowns bounds TargetFlapStatus.Downs: two are enough to damp a target.
const MaxFlapDowns = 16

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
	// Peers are the other members (clusters and witnesses) and their last exchange. With
	// spec.edge and no --ext-gslb-clusters, the clusters are the last edge NS set read: a failed
	// read keeps them.
	// +optional
	Peers []PeerStatus `json:"peers,omitempty"`
	// Members counts the membership: this cluster, its peer clusters and the witnesses.
	// +optional
	Members int32 `json:"members,omitempty"`
	// Heard counts the members whose records this cluster holds fresh (itself included; with
	// spec.healthCheck the fewest over the hosts, else the peers that answered).
	// +optional
	Heard int32 `json:"heard,omitempty"`
	// Quorum is the number of members that is more than half of Members: a target leaves the
	// answers on that many Down verdicts, and a cluster that hears fewer is isolated.
	// +optional
	Quorum int32 `json:"quorum,omitempty"`
	// Targets, with spec.healthCheck: every target of every host, with this cluster's probe,
	// the peers' verdicts and the decision.
	// +optional
	// +listType=map
	// +listMapKey=host
	// +listMapKey=target
	Targets []GslbTargetStatus `json:"targets,omitempty"`
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
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.conditions[?(@.type=="Served")].reason`
// +kubebuilder:printcolumn:name="Heard",type=integer,JSONPath=`.status.heard`
// +kubebuilder:printcolumn:name="Members",type=integer,JSONPath=`.status.members`
// +kubebuilder:printcolumn:name="Quorum",type=integer,JSONPath=`.status.quorum`,priority=1
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
