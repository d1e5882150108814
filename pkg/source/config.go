package source

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// Source names, as --source takes them (external-dns's names).
const (
	Service          = "service"
	Ingress          = "ingress"
	GatewayHTTPRoute = "gateway-httproute"
	GatewayGRPCRoute = "gateway-grpcroute"
	GatewayTLSRoute  = "gateway-tlsroute"
	GatewayTCPRoute  = "gateway-tcproute"
	GatewayUDPRoute  = "gateway-udproute"
	CRD              = "crd"
)

// Names returns every source name, in --source's documented order.
func Names() []string {
	return []string{Service, Ingress, GatewayHTTPRoute, GatewayGRPCRoute, GatewayTLSRoute, GatewayTCPRoute, GatewayUDPRoute, CRD}
}

// Config is the sources' flags. The zero value enables no source (the manager without
// --source reads only dnsplane's own kinds).
type Config struct {
	// Sources are the --source names; each at most once.
	Sources []string
	// Domains are --domain-filter and --exclude-domains.
	Domains DomainFilter
	// AnnotationFilter and LabelFilter are --annotation-filter and --label-filter, label
	// selectors (k8s.io/apimachinery/pkg/labels syntax, e.g. "a=b,c!=d") over a source object's
	// annotations and labels; "" = every object.
	AnnotationFilter, LabelFilter string
	// IngressClasses is --ingress-class: only Ingresses of these classes; empty = every class.
	IngressClasses []string
	// GatewayName is --gateway-name: routes count only through Gateways of this name.
	GatewayName string
	// Namespace is --namespace: sources read only this namespace; "" = every namespace the
	// manager watches (--watch-namespaces), never more. Gateways are GatewayNamespace's.
	Namespace string
	// GatewayNamespace is --gateway-namespace: routes count only through Gateways of this
	// namespace; "" = every namespace the manager watches, whatever Namespace is (external-dns
	// limits routes by --namespace and Gateways by --gateway-namespace).
	GatewayNamespace string
	// ManagedRecordTypes is --managed-record-types: the record types the service, ingress and
	// route sources publish; nil = external-dns's default, DefaultManagedRecordTypes. The crd
	// source's objects name their own types, which it publishes whatever this says.
	ManagedRecordTypes []string
	// PublishInternal is --publish-internal-services (ClusterIP Services' hostname annotation).
	PublishInternal bool
	// IncludeUnschedulable is --exclude-unschedulable=false (--no-exclude-unschedulable): a
	// NodePort Service's targets keep the nodes with spec.unschedulable (cordoned). The zero
	// value leaves them out, external-dns's default.
	IncludeUnschedulable bool
	// ServiceTypes is --service-type-filter: only Services of these types (ClusterIP,
	// NodePort, LoadBalancer, ExternalName); empty = every type.
	ServiceTypes []string
	// IgnoreHostnameAnnotation is --ignore-hostname-annotation: the hostname (and a Service's
	// internal-hostname) annotations publish nothing; Ingresses and routes keep their spec's
	// names.
	IgnoreHostnameAnnotation bool
	// IgnoreIngressTLSSpec and IgnoreIngressRulesSpec are --ignore-ingress-tls-spec and
	// --ignore-ingress-rules-spec: an Ingress's spec.tls[].hosts, resp. spec.rules[].host, are
	// not read for names.
	IgnoreIngressTLSSpec, IgnoreIngressRulesSpec bool
	// PublishHostIP is --publish-host-ip: a headless Service publishes each pod's
	// status.hostIP instead of its address (as endpoints-type HostIP does for one Service).
	PublishHostIP bool
	// AlwaysPublishNotReady is --always-publish-not-ready-addresses: a headless Service
	// publishes its not-ready endpoints too, as spec.publishNotReadyAddresses does for one.
	AlwaysPublishNotReady bool
}

// DefaultManagedRecordTypes returns external-dns's default --managed-record-types (A, AAAA,
// CNAME): without SRV, a NodePort Service's SRV records are not published.
func DefaultManagedRecordTypes() []string { return []string{"A", "AAAA", "CNAME"} }

// Manages reports whether records of type typ pass --managed-record-types (compared as
// written, as external-dns does).
func (c Config) Manages(typ string) bool {
	types := c.ManagedRecordTypes
	if types == nil {
		types = DefaultManagedRecordTypes()
	}
	return slices.Contains(types, typ)
}

// ManagedOnly returns the endpoints of eps whose type passes --managed-record-types, in order.
func (c Config) ManagedOnly(eps []dnsv1.Endpoint) []dnsv1.Endpoint {
	var out []dnsv1.Endpoint
	for _, e := range eps {
		if c.Manages(e.RecordType) {
			out = append(out, e)
		}
	}
	return out
}

// GatewaySelected reports whether a route counts through a Gateway of namespace ns: within
// --gateway-namespace when set, and within watchNamespaces (the manager's --watch-namespaces)
// when those are set, since the manager reads nothing outside them.
func (c Config) GatewaySelected(ns string, watchNamespaces []string) bool {
	if c.GatewayNamespace != "" && ns != c.GatewayNamespace {
		return false
	}
	return len(watchNamespaces) == 0 || slices.Contains(watchNamespaces, ns)
}

// ServiceTypes returns the Service types --service-type-filter takes.
func ServiceTypes() []string {
	return []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"}
}

// ServiceTypeSelected reports whether a Service of type typ passes --service-type-filter.
// An unset type is ClusterIP, the API's default.
func (c Config) ServiceTypeSelected(typ string) bool {
	if typ == "" {
		typ = "ClusterIP"
	}
	return len(c.ServiceTypes) == 0 || slices.Contains(c.ServiceTypes, typ)
}

// Enabled reports whether the source name is on.
func (c Config) Enabled(name string) bool { return slices.Contains(c.Sources, name) }

// Selectors returns the parsed annotation and label filters. Errors name the flag.
func (c Config) Selectors() (annotations, labelSel labels.Selector, err error) {
	annotations, err = labels.Parse(c.AnnotationFilter)
	if err != nil {
		return nil, nil, fmt.Errorf("--annotation-filter %q: %w", c.AnnotationFilter, err)
	}
	labelSel, err = labels.Parse(c.LabelFilter)
	if err != nil {
		return nil, nil, fmt.Errorf("--label-filter %q: %w", c.LabelFilter, err)
	}
	return annotations, labelSel, nil
}

// Validate checks the flags: known, distinct source names; DNS names in the domain filters;
// known Service types; selectors that parse; namespace names (--namespace, --gateway-namespace)
// that are one of watchNamespaces when those are set (they narrow the sources, never widen the
// manager); record type names (--managed-record-types). Errors name the flag.
func (c Config) Validate(watchNamespaces []string) error {
	var errs []error
	for i, s := range c.Sources {
		if !slices.Contains(Names(), s) {
			errs = append(errs, fmt.Errorf("--source %q: not one of %s", s, strings.Join(Names(), ", ")))
		} else if slices.Contains(c.Sources[:i], s) {
			errs = append(errs, fmt.Errorf("--source %q: given twice", s))
		}
	}
	for flag, list := range map[string][]string{"--domain-filter": c.Domains.Include, "--exclude-domains": c.Domains.Exclude} {
		for _, d := range list {
			if err := ValidateHostname(strings.TrimPrefix(d, ".")); err != nil {
				errs = append(errs, fmt.Errorf("%s %q: %w", flag, d, err))
			}
		}
	}
	for _, t := range c.ServiceTypes {
		if !slices.Contains(ServiceTypes(), t) {
			errs = append(errs, fmt.Errorf("--service-type-filter %q: not one of %s", t, strings.Join(ServiceTypes(), ", ")))
		}
	}
	if _, _, err := c.Selectors(); err != nil {
		errs = append(errs, err)
	}
	for flag, ns := range map[string]string{"--namespace": c.Namespace, "--gateway-namespace": c.GatewayNamespace} {
		if err := validNamespace(flag, ns, watchNamespaces); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range c.ManagedRecordTypes {
		if _, ok := dns.StringToType[t]; !ok {
			errs = append(errs, fmt.Errorf("--managed-record-types %q: not a DNS record type name in upper case, such as SRV", t))
		}
	}
	return errors.Join(errs...)
}

// validNamespace checks a namespace flag's value: "" (none), or a namespace name that is one of
// watchNamespaces when those are set (the flag narrows the sources, never widens the manager).
func validNamespace(flag, ns string, watchNamespaces []string) error {
	if ns == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return fmt.Errorf("%s %q: not a namespace name: %s", flag, ns, strings.Join(msgs, "; "))
	}
	if len(watchNamespaces) > 0 && !slices.Contains(watchNamespaces, ns) {
		return fmt.Errorf("%s %q is not one of --watch-namespaces %s: a source never reads outside them", flag, ns, strings.Join(watchNamespaces, ","))
	}
	return nil
}
