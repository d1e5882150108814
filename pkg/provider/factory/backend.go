package factory

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/provider/rfc2136"
)

// Backend returns the identity of the DNS account a provider Secret reaches, without any
// credential: two Secrets with the same Backend reach the same hosted zones, whatever keys or
// tokens they hold, so a zone ID is one hosted zone within a Backend (docs/api.md, "Tenancy").
//
//   - dnsplane.io/local: the embedded server; every such Secret reaches the same zones.
//   - dnsplane.io/pdns: PDNS_API_URL (scheme and host lower-cased, no trailing slash) and
//     PDNS_SERVER_ID (default localhost).
//   - dnsplane.io/rfc2136: RFC2136_HOST (lower-cased) and RFC2136_PORT (default 53).
//   - dnsplane.io/aws: AWS_ENDPOINT_URL only: Route 53 hosted zone IDs are unique across
//     accounts.
//   - dnsplane.io/google: GOOGLE_ENDPOINT_URL and GOOGLE_PROJECT_ID (managed zone names are
//     unique within a project).
//   - dnsplane.io/azure: AZURE_ENDPOINT_URL, AZURE_SUBSCRIPTION_ID and AZURE_RESOURCE_GROUP
//     (lower-cased: Azure resource names are case-insensitive).
//   - dnsplane.io/webhook: WEBHOOK_URL (the webhook answers for whatever DNS account it holds).
//
// Host names are compared as written: a server reached by a name in one Secret and by its
// address in another has two Backends. Another type gives its type alone.
func Backend(s *corev1.Secret) string {
	get := func(k string) string { return strings.TrimSpace(string(s.Data[k])) }
	typ := string(s.Type)
	switch s.Type {
	case TypeLocal:
		return typ
	case TypePDNS:
		server := get("PDNS_SERVER_ID")
		if server == "" {
			server = pdns.DefaultServerID
		}
		return typ + " " + canonicalURL(get("PDNS_API_URL")) + " server " + server
	case TypeRFC2136:
		port := get("RFC2136_PORT")
		if port == "" {
			port = strconv.Itoa(rfc2136.DefaultPort)
		}
		return typ + " " + net.JoinHostPort(dnswire.Dotless(get("RFC2136_HOST")), port)
	case TypeAWS:
		return typ + " " + canonicalURL(get("AWS_ENDPOINT_URL"))
	case TypeGoogle:
		return typ + " " + canonicalURL(get("GOOGLE_ENDPOINT_URL")) + " project " + get("GOOGLE_PROJECT_ID")
	case TypeWebhook:
		return typ + " " + canonicalURL(get(KeyWebhookURL))
	case TypeAzure:
		return typ + " " + canonicalURL(get("AZURE_ENDPOINT_URL")) + " subscription " + strings.ToLower(get("AZURE_SUBSCRIPTION_ID")) +
			" resourceGroup " + strings.ToLower(get("AZURE_RESOURCE_GROUP"))
	}
	return typ
}

// canonicalURL lower-cases a URL's scheme and host and drops a trailing slash; a value that does
// not parse is returned as given.
func canonicalURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return strings.TrimSuffix(raw, "/")
	}
	u.Scheme, u.Host = strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.User = nil // never carry credentials in an identity
	return u.String()
}
