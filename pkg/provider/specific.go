package provider

// ProviderSpecific keys (RecordSet.ProviderSpecific, an endpoint's providerSpecific), as
// external-dns names them. Every package that reads or writes one uses these constants.
const (
	// KeyAlias "true" makes an A or AAAA set an alias: one target, the name it answers for, and
	// no TTL of its own (it answers with its target's), so no default TTL is applied to it. Route
	// 53 writes it as an AliasTarget.
	KeyAlias = "alias"
	// KeyWeight is a weighted set's routing weight, an integer, under external-dns's AWS name.
	// The record controllers carry it as RecordSet.Weight (and drop the key) for every provider
	// with weighted routing; the sources and the Gslb controller write it on endpoints.
	KeyWeight = "aws/weight"
	// KeyAWSEvaluateTargetHealth is a Route 53 alias's AliasTarget.EvaluateTargetHealth, "true"
	// or "false".
	KeyAWSEvaluateTargetHealth = "aws/evaluate-target-health"
	// KeyAWSTargetHostedZone is a Route 53 alias's AliasTarget.HostedZoneId, the hosted zone ID
	// of the alias target.
	KeyAWSTargetHostedZone = "aws/target-hosted-zone"
)
