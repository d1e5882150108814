package source

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// The annotation prefixes: external-dns's two, and dnsplane's equivalent. For one key,
// dnsplane.io/ wins, then ExternalDNSV022Prefix, then ExternalDNSPrefix.
const (
	// ExternalDNSPrefix is the prefix of external-dns's docs and of its releases before v0.22.
	ExternalDNSPrefix = "external-dns.alpha.kubernetes.io/"
	// ExternalDNSV022Prefix is the default of external-dns v0.22's --annotation-prefix
	// (sigs.k8s.io/external-dns source/annotations DefaultAnnotationPrefix), the only prefix
	// v0.22 reads by default: objects annotated for it publish the same names here.
	ExternalDNSV022Prefix = "external-dns.kubernetes.io/"
	DNSPlanePrefix        = "dnsplane.io/"
)

// Annotation keys, without a prefix; each has external-dns's meaning (its docs, "Annotations").
const (
	KeyHostname         = "hostname"
	KeyInternalHostname = "internal-hostname"
	KeyTTL              = "ttl"
	KeyTarget           = "target"
	KeySetIdentifier    = "set-identifier"
	KeyAWSWeight        = "aws-weight"
	KeyAccess           = "access"
	KeyController       = "controller"
	// KeyHostnameSource is ingress-hostname-source; Gateway routes read the same values from
	// KeyGatewayHostnameSource, as external-dns does.
	KeyHostnameSource        = "ingress-hostname-source"
	KeyGatewayHostnameSource = "gateway-hostname-source"
	// KeyEndpointsType is endpoints-type: what a headless Service's names point to instead of
	// the pods' addresses (EndpointsTypeNodeExternalIP or EndpointsTypeHostIP).
	KeyEndpointsType = "endpoints-type"
)

// Values of the hostname-source annotations (in any case, as external-dns lower-cases them) and
// of access (as written).
const (
	HostnameSourceAnnotationOnly   = "annotation-only"
	HostnameSourceDefinedHostsOnly = "defined-hosts-only"
	AccessPublic                   = "public"
	AccessPrivate                  = "private"
	// EndpointsTypeNodeExternalIP publishes the ExternalIP addresses of each pod's node,
	// EndpointsTypeHostIP each pod's status.hostIP (external-dns's values, case as written).
	EndpointsTypeNodeExternalIP = "NodeExternalIP"
	EndpointsTypeHostIP         = "HostIP"
)

// Problem is a value that could not be used, for a Warning Event on the source object: Reason is
// one of dnsv1's Reason* constants (ReasonInvalidTTL, ReasonInvalidHostname, ReasonInvalidTarget,
// ReasonInvalidAnnotation), Message names the annotation or field and the value.
type Problem struct {
	Reason, Message string
}

func problem(reason, format string, args ...any) Problem {
	return Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// Annotations are an object's parsed external-dns annotations.
type Annotations struct {
	// Hostnames and InternalHostnames are the hostname and internal-hostname lists, valid DNS
	// names only, without a trailing dot.
	Hostnames, InternalHostnames []string
	// TTL is the ttl in seconds; 0 when unset or invalid. TTLInvalid says it was set but
	// unusable, so that the controller keeps what it published before (no change for that value).
	TTL        dnsv1.TTL
	TTLInvalid bool
	// Targets override the object's own targets; valid IP addresses and host names only.
	Targets []string
	// SetIdentifier and Weight (aws-weight) mark a weighted record set.
	SetIdentifier string
	Weight        *int64
	// Access is public, private or "" (NodePort Services); the annotation's value is compared
	// as written, as external-dns does, so another case is out of range.
	Access string
	// Controller is the controller annotation's value, "" when unset.
	Controller string
	// HostnameSource is annotation-only, defined-hosts-only or "" (Ingresses and routes).
	HostnameSource string
	// EndpointsType is EndpointsTypeNodeExternalIP, EndpointsTypeHostIP or "" (headless
	// Services).
	EndpointsType string
}

// Ours reports whether the controller annotation leaves the object to this manager: unset,
// "dns-controller" (external-dns's own value) or "dnsplane". An object whose controller
// annotation says anything else belongs to another controller and is not published (external-dns
// skips it too).
func (a Annotations) Ours() bool {
	return a.Controller == "" || a.Controller == "dns-controller" || a.Controller == "dnsplane"
}

// annotation returns the first of dnsplane.io/<key>, external-dns.kubernetes.io/<key> and
// external-dns.alpha.kubernetes.io/<key> that is set, and the full key read.
func annotation(ann map[string]string, key string) (value, name string, ok bool) {
	for _, p := range []string{DNSPlanePrefix, ExternalDNSV022Prefix, ExternalDNSPrefix} {
		if v, ok := ann[p+key]; ok {
			return strings.TrimSpace(v), p + key, true
		}
	}
	return "", ExternalDNSPrefix + key, false
}

// ParseAnnotations parses ann's external-dns annotations (hostnameSourceKey is
// KeyHostnameSource or KeyGatewayHostnameSource). Each unusable value is left out and reported.
func ParseAnnotations(ann map[string]string, hostnameSourceKey string) (Annotations, []Problem) {
	var a Annotations
	var probs []Problem
	a.Hostnames, probs = hostnames(ann, KeyHostname, probs)
	a.InternalHostnames, probs = hostnames(ann, KeyInternalHostname, probs)
	if v, name, ok := annotation(ann, KeyTTL); ok {
		ttl, err := ParseTTL(v)
		if err != nil {
			probs = append(probs, problem(dnsv1.ReasonInvalidTTL, "%s %q: %v; the TTL published before is kept", name, v, err))
			a.TTLInvalid = true
		}
		a.TTL = ttl
	}
	var tp []Problem
	a.Targets, tp = TargetAnnotation(ann)
	probs = append(probs, tp...)
	a.SetIdentifier, _, _ = annotation(ann, KeySetIdentifier)
	if v, name, ok := annotation(ann, KeyAWSWeight); ok {
		w, err := strconv.ParseInt(v, 10, 64)
		if err != nil || w < 0 || w > 255 {
			probs = append(probs, problem(dnsv1.ReasonInvalidAnnotation, "%s %q: not a weight from 0 to 255 (Route 53's range); no weight is set", name, v))
		} else {
			a.Weight = &w
		}
	}
	probs = a.enums(ann, hostnameSourceKey, probs)
	return a, probs
}

// enums parses the annotations whose values are one of a few words.
func (a *Annotations) enums(ann map[string]string, hostnameSourceKey string, probs []Problem) []Problem {
	if v, name, ok := annotation(ann, KeyAccess); ok {
		// As written, as external-dns compares it: "Private" chooses nothing.
		if v == AccessPublic || v == AccessPrivate {
			a.Access = v
		} else {
			probs = append(probs, problem(dnsv1.ReasonInvalidAnnotation, "%s %q: must be public or private, in lower case; ignored (ExternalIP addresses if any node has one, else InternalIP)", name, v))
		}
	}
	if v, name, ok := annotation(ann, hostnameSourceKey); ok {
		if v = strings.ToLower(v); v == HostnameSourceAnnotationOnly || v == HostnameSourceDefinedHostsOnly {
			a.HostnameSource = v
		} else {
			probs = append(probs, problem(dnsv1.ReasonInvalidAnnotation, "%s %q: must be annotation-only or defined-hosts-only; ignored (both sources are used)", name, v))
		}
	}
	if v, name, ok := annotation(ann, KeyEndpointsType); ok {
		if v == EndpointsTypeNodeExternalIP || v == EndpointsTypeHostIP {
			a.EndpointsType = v
		} else {
			probs = append(probs, problem(dnsv1.ReasonInvalidAnnotation, "%s %q: must be NodeExternalIP or HostIP; ignored (the pods' addresses are published)", name, v))
		}
	}
	a.Controller, _, _ = annotation(ann, KeyController)
	return probs
}

// TargetAnnotation returns the valid targets of ann's target annotation (comma-separated), and
// the problems of the others; none when it is unset.
func TargetAnnotation(ann map[string]string) ([]string, []Problem) {
	v, name, ok := annotation(ann, KeyTarget)
	if !ok {
		return nil, nil
	}
	return ParseTargets(SplitList(v), name)
}

// hostnames parses the comma-separated hostname list of key, keeping the valid DNS names.
func hostnames(ann map[string]string, key string, probs []Problem) ([]string, []Problem) {
	v, name, ok := annotation(ann, key)
	if !ok {
		return nil, probs
	}
	var out []string
	for _, h := range SplitList(v) {
		if err := ValidateHostname(h); err != nil {
			probs = append(probs, problem(dnsv1.ReasonInvalidHostname, "%s %q: %v; not published", name, h, err))
			continue
		}
		out = append(out, dnswire.Dotless(h))
	}
	return out, probs
}

// SplitList returns the comma-separated items of s, trimmed, without empty ones.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseTTL parses a ttl annotation as external-dns does: whole seconds ("60") or a Go duration
// ("1m"), from 1 s to 2^31-1 s (RFC 2181 §8). Errors say which rule the value breaks.
func ParseTTL(s string) (dnsv1.TTL, error) {
	secs, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		d, derr := time.ParseDuration(s)
		if derr != nil {
			return 0, fmt.Errorf("not a number of seconds nor a duration such as 5m")
		}
		secs = int64(d / time.Second)
	}
	if secs < 1 || secs > math.MaxInt32 {
		return 0, fmt.Errorf("out of range: a TTL is from 1 to 2147483647 seconds (RFC 2181 §8)")
	}
	return dnsv1.TTL(secs), nil
}

// ValidateHostname checks that h is a DNS host name as DNSEndpoint's dnsName admits it: labels
// of letters, digits, '-' and '_' of 1 to 63 characters that neither start nor end with '-', at
// most 253 characters in all without the trailing dot, a leading "*." included (RFC 1035
// §2.3.4; the name the providers take, provider.ValidateName), optionally "*." first and a
// trailing dot. Errors say why not.
func ValidateHostname(h string) error {
	full := strings.TrimSuffix(h, ".")
	name := strings.TrimPrefix(full, "*.")
	if name == "" {
		return fmt.Errorf("empty name")
	}
	if len(full) > 253 {
		return fmt.Errorf("longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if err := validLabel(label); err != nil {
			return err
		}
	}
	return nil
}

func validLabel(l string) error {
	if l == "" || len(l) > 63 {
		return fmt.Errorf("label %q is not 1 to 63 characters long", l)
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("label %q starts or ends with '-'", l)
	}
	for _, c := range l {
		ok := c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if !ok {
			return fmt.Errorf("label %q has %q, which is not a letter, digit, '-' or '_'", l, c)
		}
	}
	return nil
}

// ParseTargets keeps the targets that are an IPv4 address, an IPv6 address or a host name, and
// reports the others, naming field: an IPv4-mapped IPv6 address (::ffff:192.0.2.1) is the wrong
// family (it would be published as AAAA for an IPv4 host), an address with a zone (fe80::1%eth0)
// has no meaning outside the host.
func ParseTargets(targets []string, field string) ([]string, []Problem) {
	var out []string
	var probs []Problem
	for _, t := range targets {
		if err := validTarget(t); err != nil {
			probs = append(probs, problem(dnsv1.ReasonInvalidTarget, "%s %q: %v; not published", field, t, err))
			continue
		}
		if a, err := netip.ParseAddr(t); err == nil {
			out = append(out, a.String())
		} else {
			out = append(out, dnswire.Dotless(t))
		}
	}
	return out, probs
}

func validTarget(t string) error {
	a, err := netip.ParseAddr(t)
	if err != nil {
		if strings.ContainsAny(t, ":%") || looksNumeric(t) {
			return fmt.Errorf("not an IP address: %v", err)
		}
		if err := ValidateHostname(t); err != nil || strings.HasPrefix(t, "*.") {
			return fmt.Errorf("neither an IP address nor a host name")
		}
		return nil
	}
	switch {
	case a.Zone() != "":
		return fmt.Errorf("an address with a zone is not a DNS target")
	case a.Is4In6():
		return fmt.Errorf("an IPv4-mapped IPv6 address is the wrong family: write the IPv4 address %s", a.Unmap())
	}
	return nil
}

// looksNumeric: only digits and dots, such as 300.1.2.3, is a broken IPv4 address, not a name.
func looksNumeric(t string) bool {
	return strings.Trim(t, "0123456789.") == ""
}
