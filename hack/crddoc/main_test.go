package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

func TestJoinDescriptions(t *testing.T) {
	// schema is a CRD schema fragment whose zone property has the description lines %s.
	const schema = `        properties:
          zone:
            description: |-
%s            type: string
          other:
            description: One line already.
`
	in := fmt.Sprintf(schema, `              Zone is the zone's name, e.g.
              c1.example.com. It is immutable.

              A second paragraph
              on two lines.
              - a list item
              - another
                  code, kept
`)
	want := fmt.Sprintf(schema, `              Zone is the zone's name, e.g. c1.example.com. It is immutable.

              A second paragraph on two lines.
              - a list item
              - another
                  code, kept
`)
	if got := joinDescriptions(in); got != want {
		t.Fatalf("joinDescriptions:\n%s\nwant:\n%s", got, want)
	}
	if again := joinDescriptions(want); again != want {
		t.Fatalf("joinDescriptions is not idempotent:\n%s", again)
	}
}

// TestCRDDescriptionsAreParagraphs: the generated CRDs (make manifests) hold every description
// paragraph on one line, so kubectl explain wraps them at its own width and no line of its
// output ends a few words early, mid-sentence.
func TestCRDDescriptionsAreParagraphs(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("CRDs %v: %v", paths, err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, v := range crd.Spec.Versions {
			walk(v.Schema.OpenAPIV3Schema, crd.Spec.Names.Kind, func(path, desc string) {
				for _, para := range strings.Split(desc, "\n\n") {
					if strings.Contains(para, "\n") {
						t.Errorf("%s: %s's description breaks a paragraph's line (run make manifests):\n%s", filepath.Base(p), path, para)
					}
				}
			})
		}
	}
}

// walk calls f with the path and description of s and of every schema below it.
func walk(s *apiextensionsv1.JSONSchemaProps, path string, f func(path, desc string)) {
	if s == nil {
		return
	}
	if s.Description != "" {
		f(path, s.Description)
	}
	for k, p := range s.Properties {
		walk(&p, path+"."+k, f)
	}
	if s.Items != nil {
		walk(s.Items.Schema, path+"[]", f)
	}
	if s.AdditionalProperties != nil {
		walk(s.AdditionalProperties.Schema, path+"{}", f)
	}
}
