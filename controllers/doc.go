// Package controllers groups dnsplane's reconcilers, one package per kind: dnszone and
// dnsendpoint. Each reconciler reads its object, computes, writes the provider through a zone
// writer, and records the outcome in status conditions and Events. Shared helpers live in
// controllers/internal.
package controllers
