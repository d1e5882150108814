package v1alpha1

// Condition types. Ready is the summary condition of every kind, the one that
// `kubectl wait --for=condition=Ready` uses.
const (
	// ConditionReady summarises the object.
	ConditionReady = "Ready"
	// ConditionZoneAvailable is True once an SOA query for the hosted zone gets an authoritative
	// answer (DNSZone).
	ConditionZoneAvailable = "ZoneAvailable"
	// ConditionParentLinkCreated is True once the parent zone serves exactly this zone's NS set,
	// as confirmed by the nameserver scraper (DNSZone with linkToParentDomain).
	ConditionParentLinkCreated = "ParentLinkCreated"
	// ConditionHealthy is True while every contributor of a DNSRecord's rootHost heartbeats.
	ConditionHealthy = "Healthy"
	// ConditionServed is True once every authoritative name server of each zone the object
	// wrote to answers the SOA serial that carries its last change, or a later one
	// (docs/served.md); Ready keeps its meaning, "the provider accepted the write".
	ConditionServed = "Served"
	// ConditionDynamicUpdatesReady is True once every key of a DNSZone's spec.dynamicUpdates is
	// read from its Secret and usable; False names the first Secret that is not, and why.
	ConditionDynamicUpdatesReady = "DynamicUpdatesReady"
	// ConditionSecure is True once the zone is signed and its chain of trust from the parent
	// validates; with spec.dnssec absent or disabled it is False, reason Unsigned
	// (docs/dnssec.md, "Reasons").
	ConditionSecure = "Secure"
)

// Secure reasons (docs/dnssec.md, "Reasons").
const (
	// ReasonSigning (Secure=False): the zone's keys exist and its signer is taking them up;
	// the DS is not published yet.
	ReasonSigning = "Signing"
	// ReasonDSPending (Secure=False): the zone is signed; its DS set (status.dnssec.ds) is not
	// yet served by every parent name server: the parent link writes it, or, for a parent
	// outside dnsplane, the registrar is to be given it.
	ReasonDSPending = "DSPending"
	// ReasonSecure (Secure=True): every parent name server serves the DS set and a validating
	// resolver gets authenticated answers from the zone.
	ReasonSecure = "Secure"
	// ReasonRolloverInProgress (Secure=True): a key rollover is under way
	// (status.dnssec.rolloverPhase); the chain validates at every step.
	ReasonRolloverInProgress = "RolloverInProgress"
	// ReasonChainBroken (Secure=False): the parent's DS set matches no key-signing key of the
	// zone, or a validator finds the zone bogus.
	ReasonChainBroken = "ChainBroken"
	// ReasonNotSupported (Secure=False): the zone's provider does not sign as asked (no
	// signing at all, or not the denial spec.dnssec names); the message says which. Terminal
	// until the spec or the provider Secret changes.
	ReasonNotSupported = "NotSupported"
	// ReasonProviderActionNeeded (Secure=False): the provider reports a signing problem only
	// its owner can fix (a key it cannot use, a state it calls action needed).
	ReasonProviderActionNeeded = "ProviderActionNeeded"
	// ReasonUnsigned (Secure=False): spec.dnssec is absent or not enabled.
	ReasonUnsigned = "Unsigned"
	// ReasonUnsigning (Secure=False): DNSSEC is turned off and the zone is still signed: its DS
	// is leaving the parent, or every parent name server answers none and the DS TTL is not
	// over yet; the message says which.
	ReasonUnsigning = "Unsigning"
	// ReasonKeysInvalid (Secure=False): the key Secret <dnszone>-dnssec exists but holds no
	// key set of this zone (none, another zone's, or one that does not parse); it is left
	// untouched, and the zone is not signed from it until it is fixed or deleted.
	ReasonKeysInvalid = "KeysInvalid"
	// ReasonKeysNotCopied (Secure=False): spec.dnssec.keys.source is Copied and the key Secret
	// <dnszone>-dnssec is not there: the admin copies it from the cluster that generates the
	// zone's keys; none is made here, and the zone is not signed until it is there.
	ReasonKeysNotCopied = "KeysNotCopied"
	// ReasonAlgorithmChangeNotSupported (Secure=True or False, as the chain verifies):
	// spec.dnssec.algorithm is not the algorithm of the zone's active keys, which go on
	// signing; the algorithm changes only by turning DNSSEC off and on again.
	ReasonAlgorithmChangeNotSupported = "AlgorithmChangeNotSupported"
)

// Condition reasons, CamelCase as metav1.Condition requires.
const (
	// ReasonKeysResolved (DynamicUpdatesReady=True): every dynamic-update key is usable.
	ReasonKeysResolved = "KeysResolved"
	// ReasonKeySecretNotFound (DynamicUpdatesReady=False): a keySecretRef names no Secret.
	ReasonKeySecretNotFound = "KeySecretNotFound"
	// ReasonInvalidKeySecret (DynamicUpdatesReady=False): a key Secret is not of type
	// dnsplane.io/tsig, lacks name, algorithm or secret, names an unknown algorithm, holds a
	// secret that is not base64, or shares its key name with another key Secret.
	ReasonInvalidKeySecret = "InvalidKeySecret"

	// ReasonReady: every step succeeded.
	ReasonReady = "Ready"
	// ReasonZoneAvailable: the hosted zone answers SOA authoritatively.
	ReasonZoneAvailable = "ZoneAvailable"
	// ReasonAwaitingSOA: the hosted zone exists but does not answer SOA yet; polled every
	// --soa-poll-interval.
	ReasonAwaitingSOA = "AwaitingSOA"
	// ReasonZoneConflict: a hosted zone of the same name exists at the provider and is not ours
	// (adopt it with spec.zoneID), or a DNSZone of another namespace already holds this hosted
	// zone and does not list this namespace in sharing.allowedNamespaces.
	ReasonZoneConflict = "ZoneConflict"
	// ReasonParentNotAllowed: the zone is inside the zone of a DNSZone of another namespace that
	// does not list this namespace in delegation.allowedNamespaces; it is not created or served.
	ReasonParentNotAllowed = "ParentNotAllowed"
	// ReasonProviderNotFound: the provider Secret is missing or of an unknown type.
	ReasonProviderNotFound = "ProviderNotFound"
	// ReasonInvalidCredentials: the provider rejected the credentials, or the Secret is malformed.
	ReasonInvalidCredentials = "InvalidCredentials"
	// ReasonProviderError: the provider failed; retried with back-off.
	ReasonProviderError = "ProviderError"
	// ReasonZoneDeletedAtProvider: the hosted zone was deleted at the provider outside dnsplane,
	// as a zone writer found (ErrZoneNotFound). A zone dnsplane created is re-created and its
	// records republished; an adopted zone (spec.zoneID) is not.
	ReasonZoneDeletedAtProvider = "ZoneDeletedAtProvider"

	// ReasonParentLinked: the parent serves exactly this zone's NS set and its glue.
	ReasonParentLinked = "ParentLinked"
	// ReasonAwaitingParent: the parent zone exists but is not available yet.
	ReasonAwaitingParent = "AwaitingParent"
	// ReasonParentNotFound: no DNSZone is a proper suffix of this zone, or parentRef names none.
	ReasonParentNotFound = "ParentNotFound"
	// ReasonDelegationNotAllowed: the zone is in another namespace that does not list this one in
	// delegation.allowedNamespaces, or the object writes more than NS, DS and glue there.
	ReasonDelegationNotAllowed = "DelegationNotAllowed"
	// ReasonAwaitingScrape: the link is written; the scraper has not yet seen the parent serve it.
	ReasonAwaitingScrape = "AwaitingScrape"
	// ReasonLinkDisabled: linkToParentDomain is false.
	ReasonLinkDisabled = "LinkDisabled"
	// ReasonLameDelegation: none of the zone's NS names has an address (no A/AAAA in the zone for
	// an in-bailiwick name, none resolved for another), so no resolver could follow the
	// delegation; the link is not published (docs/api.md, "Parent link").
	ReasonLameDelegation = "LameDelegation"

	// ReasonPublished: every endpoint is published.
	ReasonPublished = "Published"

	// ReasonServed (Served=True): every name server answers the change.
	ReasonServed = "Served"
	// ReasonPropagating (Served=False): some name servers still answer an older serial, or did
	// not answer since the write; the message names them. Within --served-stale-after.
	ReasonPropagating = "Propagating"
	// ReasonStale (Served=False): as Propagating, past --served-stale-after
	// (docs/runbooks.md, "Stale").
	ReasonStale = "Stale"
	// ReasonUnreachable (Served=False): no name server of a zone answered its SOA, so nothing
	// is known of the change.
	ReasonUnreachable = "Unreachable"
	// ReasonNotChecked (Served=Unknown): the zone's provider has no name server whose SOA
	// serial says what it serves (a cloud provider, or a Secret without DNS_ADDRESS), or the
	// object has written nothing yet.
	ReasonNotChecked = "NotChecked"
	// ReasonNotWritten (Served=False): the object's last change is not all written (Ready is
	// not True: a conflict, a zone awaited, a plan awaiting approval, a failed write), so no
	// name server answers it; the message gives Ready's reason.
	ReasonNotWritten = "NotWritten"
	// ReasonAwaitingApproval: DryRun with pending changes; copy status.plan.id into
	// spec.approvedPlan to apply them once.
	ReasonAwaitingApproval = "AwaitingApproval"
	// ReasonDisabled: strategy Disabled; nothing is planned or written.
	ReasonDisabled = "Disabled"
	// ReasonOwnershipConflict: a name is held by another owner; nothing is written for it.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonDoubleClaim: a record set this object holds in dnsplane's registry is also claimed by
	// an external-dns registry record of an owner that --adopt-external-dns-owner does not name;
	// nothing is written for it until one claim goes (docs/runbooks.md, "DoubleClaim").
	ReasonDoubleClaim = "DoubleClaim"
	// ReasonInvalidEndpoint: some endpoints fall in no usable zone; the others are published.
	ReasonInvalidEndpoint = "InvalidEndpoint"
	// ReasonZoneNotFound: the DNSZone is missing or its hosted zone is gone.
	ReasonZoneNotFound = "ZoneNotFound"
	// ReasonAwaitingZone: the DNSZone that holds the names exists but is not available yet (no
	// hosted zone, or no authoritative SOA answer); retried every 5 s, and at once when the zone
	// becomes available. Not a failure: its Events are Normal.
	ReasonAwaitingZone = "AwaitingZone"

	// ReasonAllOwnersHealthy: every contributor heartbeats within --heartbeat-threshold.
	ReasonAllOwnersHealthy = "AllOwnersHealthy"
	// ReasonNoOwners: Healthy is Unknown because no contributor has a registry record at rootHost
	// yet (nothing written so far, or no endpoint at rootHost itself).
	ReasonNoOwners = "NoOwners"
	// ReasonHeartbeatFailing: some contributor's heartbeat is missing or older than
	// --heartbeat-threshold; the message names each.
	ReasonHeartbeatFailing = "HeartbeatFailing"

	// ReasonNoHealthyTargets: no cluster has healthy targets for a Gslb host. With
	// spec.healthCheck, every target of a host is down by quorum, and all of them are served
	// (an answer is never empty; Route 53's rule for an all-unhealthy set): Ready=False and a
	// Warning Event (docs/design.md, "Health and partitions").
	ReasonNoHealthyTargets = "NoHealthyTargets"
	// ReasonIsolated (Ready=True): this cluster cannot read fresh health verdicts from a
	// majority of the known clusters (itself included) for some host. It serves the last
	// answer the majority agreed on for healthCheck.isolationHoldSeconds, then decides by its
	// own probes alone; the message says which (docs/design.md, "Health and partitions").
	ReasonIsolated = "Isolated"
	// ReasonPeerErrors: some Gslb peers did not answer; they count as having no healthy targets.
	ReasonPeerErrors = "PeerErrors"
	// ReasonNotCapable: the provider lacks a capability the object needs, e.g. weighted routing
	// for a Gslb's weighted strategy, or for a DNSEndpoint's or DNSRecord's endpoint with a set
	// identifier (that endpoint alone is refused, the others are published). Terminal: not
	// retried until the spec changes (docs/runbooks.md, "NotCapable").
	ReasonNotCapable = "NotCapable"
	// ReasonNoGeoTag: the manager runs without --geo-tag, so a Gslb cannot say which cluster its
	// targets belong to; nothing is published.
	ReasonNoGeoTag = "NoGeoTag"
	// ReasonInvalidStrategy: the Gslb's strategy cannot be computed (unknown type, failover
	// without primaryGeoTag); nothing is published until the spec changes.
	ReasonInvalidStrategy = "InvalidStrategy"
	// ReasonInvalidHealthCheck: the Gslb's spec.healthCheck cannot be used to probe (a bad
	// expectedStatus that admission did not refuse, under an older CRD); nothing is published
	// until the spec changes.
	ReasonInvalidHealthCheck = "InvalidHealthCheck"
	// ReasonResourceNotFound: the Ingress or Service a Gslb's resourceRef names does not exist;
	// its hosts are NotFound in status.serviceHealth and this cluster serves no targets.
	ReasonResourceNotFound = "ResourceNotFound"
)

// Event reasons: the reasons of Events that are not a condition's change (those carry the
// condition's reason, see controllers/internal/status). CamelCase, as Events require.
const (
	// ReasonRecordsKept (a Warning Event of a deleted DNSEndpoint or DNSRecord): its release
	// left record sets behind: beside a registry record it cannot read (malformed, or of a newer
	// version), which may claim them, or in a zone whose provider Secret cannot be resolved. Its
	// own readable registry records are removed all the same.
	ReasonRecordsKept = "RecordsKept"
	// ReasonPlanApproved (Normal, DNSEndpoint or DNSRecord): spec.approvedPlan matched the
	// DryRun plan, which is being applied once.
	ReasonPlanApproved = "PlanApproved"
	// ReasonPreserved (Normal, deleted DNSZone): the hosted zone and its parent link are
	// kept (preserveOnDelete, or an adopted spec.zoneID).
	ReasonPreserved = "Preserved"
	// ReasonZoneKept (deleted DNSZone): the hosted zone is kept: Warning when records of
	// other owners remain in it, Normal when this DNSZone did not create it.
	ReasonZoneKept = "ZoneKept"
	// ReasonZoneDeleted (Normal, deleted DNSZone): the hosted zone was deleted at the
	// provider.
	ReasonZoneDeleted = "ZoneDeleted"
	// ReasonZoneRecreated (Normal, DNSZone): the hosted zone was deleted at the provider
	// outside dnsplane and has been re-created; its records are republished (see
	// ReasonZoneDeletedAtProvider).
	ReasonZoneRecreated = "ZoneRecreated"
)

// Reasons of a Gslb target's decision (status.targets[].reason), with spec.healthCheck
// (docs/design.md, "Health and partitions").
const (
	// TargetReasonHealthy (Up): fewer than a majority of the clusters with a fresh verdict
	// call the target down.
	TargetReasonHealthy = "Healthy"
	// TargetReasonNotProbed (Up): no cluster has a verdict for the target yet; it is served
	// on its owner's readiness alone.
	TargetReasonNotProbed = "NotProbed"
	// TargetReasonQuorumDown (Down): a majority of the clusters with a fresh verdict call the
	// target down.
	TargetReasonQuorumDown = "QuorumDown"
	// TargetReasonHeldWhileIsolated (Up or Down): this cluster is isolated; the target keeps
	// the decision last agreed while it was not (fail static), for isolationHoldSeconds.
	TargetReasonHeldWhileIsolated = "HeldWhileIsolated"
	// TargetReasonOwnProbesOnly (Up or Down): this cluster has been isolated for longer than
	// isolationHoldSeconds; its own probe decides alone.
	TargetReasonOwnProbesOnly = "OwnProbesOnly"
	// TargetReasonFlapDamped (Down): the quorum says Up, but the target went Down twice
	// within the flap window; it comes back Up once the quorum has said Up for the dwell.
	TargetReasonFlapDamped = "FlapDamped"
)

// Event reasons of a Gslb with spec.healthCheck (besides Isolated and NoHealthyTargets, which
// are also Events when Ready changes to them).
const (
	// ReasonTargetDown (Warning): a target's decision changed to Down; the message names the
	// host, target and the verdicts.
	ReasonTargetDown = "TargetDown"
	// ReasonTargetUp (Normal): a target's decision changed back to Up.
	ReasonTargetUp = "TargetUp"
	// ReasonClockSkew (Warning): a member's verdict record time is off this cluster's clock by
	// more than the skew tolerated; the message names the member and the offset
	// (status.peers[].clockOffset).
	ReasonClockSkew = "ClockSkew"
	// ReasonValidityMismatch (Warning): a member's verdict record claims a longer validity than
	// this cluster grants its own (its --gslb-interval or healthCheck interval is longer): its
	// records count for their claim, at most 3 h, so a dead member's verdicts count that long.
	ReasonValidityMismatch = "ValidityMismatch"
)

// IsWaitingReason reports whether a False condition with this reason is a normal wait (for a
// zone, an SOA answer, a parent, the scraper, an approval, a signer or a DS) or a state the
// spec asks for (Unsigned) rather than a failure: its Events are Normal, not Warning.
func IsWaitingReason(reason string) bool {
	switch reason {
	case ReasonAwaitingZone, ReasonAwaitingSOA, ReasonAwaitingParent, ReasonAwaitingScrape, ReasonAwaitingApproval,
		ReasonSigning, ReasonDSPending, ReasonUnsigned, ReasonUnsigning:
		return true
	}
	return false
}

// Finalizers.
const (
	// FinalizerZone guards a DNSZone until its parent link, records and hosted zone are removed.
	FinalizerZone = "dnsplane.io/zone"
	// FinalizerRecords guards a DNSRecord, or a DNSEndpoint created with it (a DNSZone's parent
	// link), until its records are removed. The DNSEndpoint controller adds it to no object: a
	// deleted DNSEndpoint's records are released once it is gone (docs/api.md, "Deletion").
	FinalizerRecords = "dnsplane.io/records"
	// FinalizerGslb guards a Gslb until the DNSEndpoint and DNSRecord it owns are removed.
	FinalizerGslb = "dnsplane.io/gslb"
)

// Event reasons of the sources (--source, controllers/source): a Warning Event on the source
// object (Service, Ingress, Gateway route, external-dns DNSEndpoint) for a value that cannot be
// used; the value is left out and the rest is published.
const (
	// ReasonInvalidTTL: a ttl annotation (or an external-dns endpoint's recordTTL) is not a
	// number of seconds from 1 to 2^31-1 nor a duration; the TTL published before is kept.
	ReasonInvalidTTL = "InvalidTTL"
	// ReasonInvalidHostname: a hostname (annotation, Ingress host, route hostname, dnsName) is not
	// a DNS name; that name is not published.
	ReasonInvalidHostname = "InvalidHostname"
	// ReasonInvalidTarget: a target is not an IP address or host name, is of the wrong family
	// (an IPv4-mapped IPv6 address; an A target that is not IPv4), or a CNAME would share its
	// name; that target is not published.
	ReasonInvalidTarget = "InvalidTarget"
	// ReasonInvalidAnnotation: another annotation (aws-weight, access, ingress-hostname-source,
	// gateway-hostname-source) has a value outside its range; it is ignored.
	ReasonInvalidAnnotation = "InvalidAnnotation"
)
