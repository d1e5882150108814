// Package crd embeds the CRDs that `make manifests` generates into bases/, so the manager binary
// can install them on a local control plane from any working directory. It owns no logic beyond
// decoding them.
package crd

import (
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml
var bases embed.FS

// Definitions returns the four dnsplane CRDs. It panics if the embedded files do not decode,
// which the package's test rules out at build time.
func Definitions() []*apiextensionsv1.CustomResourceDefinition {
	crds, err := decode()
	if err != nil {
		panic(err)
	}
	return crds
}

func decode() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, n := range names {
		raw, err := bases.ReadFile(n)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", n, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
