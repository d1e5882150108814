package source

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
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
	// manager watches (--watch-namespaces), never more.
	Namespace string
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
// known Service types; selectors that parse; a namespace name that is one of watchNamespaces when those are set
// (--namespace narrows the sources, never widens the manager). Errors name the flag.
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
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--namespace %q: not a namespace name: %s", c.Namespace, strings.Join(msgs, "; ")))
		} else if len(watchNamespaces) > 0 && !slices.Contains(watchNamespaces, c.Namespace) {
			errs = append(errs, fmt.Errorf("--namespace %q is not one of --watch-namespaces %s: a source never reads outside them", c.Namespace, strings.Join(watchNamespaces, ",")))
		}
	}
	return errors.Join(errs...)
}
