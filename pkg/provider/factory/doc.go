// Package factory turns a provider Secret (docs/api.md, "Provider credentials") into a
// provider.Provider and the address where that provider's zones answer DNS queries.
//
// It owns the mapping from Secret type to provider and the reasons ProviderNotFound and
// InvalidCredentials. It must not log or return credential values, and it never writes to the
// Secret.
package factory
