// Package testclient holds test doubles shared by the controllers' unit tests: clients built on
// controller-runtime's fake client, and fakes of the small consumer-side interfaces the
// reconcilers depend on (controllers/internal/deps and those beside each reconciler): Providers,
// Capable and NoWriters. It owns no production code and must not be imported outside tests.
package testclient
