package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every dnsplane kind: dnsplane.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "dnsplane.io", Version: "v1alpha1"}

	// SchemeBuilder registers the dnsplane kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the dnsplane kinds to a scheme; it returns an error only on a registration
	// clash.
	AddToScheme = SchemeBuilder.AddToScheme
)
