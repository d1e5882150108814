// Package testclient holds test doubles shared by the controllers' unit tests: fakes of the small
// consumer-side interfaces the reconcilers depend on (controllers/internal/deps and those beside
// each reconciler): Providers, Capable and NoWriters. The failing fake client of the map-func
// tests is internal/testing/mapfunctest's. It owns no production code and must not be imported
// outside tests.
package testclient
