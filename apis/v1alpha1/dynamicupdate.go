package v1alpha1

// The TSIG key Secret of a DNSZone's spec.dynamicUpdates (docs/api.md, "Dynamic updates"):
//
//	apiVersion: v1
//	kind: Secret
//	type: dnsplane.io/tsig
//	metadata: {name: acme-key}
//	stringData:
//	  name: acme-key.            # the TSIG key name the client signs with (RFC 8945 §4.2)
//	  algorithm: hmac-sha256     # RFC 8945 §6 names; hmac-md5 only for old clients
//	  secret: cGFzc3dvcmQ=       # base64, as BIND's tsig-keygen writes it
const (
	// SecretTypeTSIG is the type of a dynamic-update key Secret.
	SecretTypeTSIG = "dnsplane.io/tsig"
	// TSIGSecretName is the Secret key that holds the TSIG key name, a domain name; a trailing
	// dot is optional and letters compare without case.
	TSIGSecretName = "name"
	// TSIGSecretAlgorithm is the Secret key that holds the HMAC algorithm: hmac-sha256,
	// hmac-sha512, hmac-sha384, hmac-sha224, hmac-sha1 or hmac-md5 (the last as
	// hmac-md5.sig-alg.reg.int too); a trailing dot is optional.
	TSIGSecretAlgorithm = "algorithm"
	// TSIGSecretSecret is the Secret key that holds the shared secret in base64 (RFC 4648 §4),
	// as BIND's tsig-keygen writes it.
	TSIGSecretSecret = "secret"
)

// Labels and annotations of the DNSEndpoints that dynamic updates write (docs/api.md, "Dynamic
// updates"). Such a DNSEndpoint holds the record sets of one owner name written through one key
// in one DNSZone; it is owned in the registry by its own name, as every DNSEndpoint is.
const (
	// LabelDynamicUpdateZone is the name of the DNSZone the records were written into.
	LabelDynamicUpdateZone = "dnsplane.io/dynamic-update-zone"
	// LabelDynamicUpdateKey is the name of the key Secret they were written with.
	LabelDynamicUpdateKey = "dnsplane.io/dynamic-update-key"
	// AnnotationDynamicUpdateExpires is when the records expire, RFC 3339 in UTC: the
	// DNSEndpoint is deleted then, unless an UPDATE deleted its records first.
	AnnotationDynamicUpdateExpires = "dnsplane.io/dynamic-update-expires"
)
