//go:build tools

// Package tools pins helm's command in this module's go.mod and go.sum; hack/helm.sh builds it.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
