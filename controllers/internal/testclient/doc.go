// Package testclient holds test doubles shared by the controllers' unit tests: clients built on
// controller-runtime's fake client. It owns no production code and must not be imported outside
// tests.
package testclient
