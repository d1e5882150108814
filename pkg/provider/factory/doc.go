// Package factory turns a provider Secret (docs/api.md, "Provider credentials") into a
// provider.Provider and the address where that provider's zones answer DNS queries
// (provider.Resolved).
//
// It owns the mapping from Secret type to provider and the reasons ProviderNotFound and
// InvalidCredentials. It must not log or return credential values, and it never writes to the
// Secret.
//
// It imports every provider implementation, and so every cloud SDK: only the composition root
// (internal/app) imports it. The controllers know it as their Providers interface
// (controllers/internal/deps) and reach only pkg/provider (imports_test.go).
package factory
