// Package xfr is the zone-transfer unit of dnsplane's embedded DNS server: what secondaries
// ask of a primary and what a primary tells them, kept apart from answering queries as
// CoreDNS keeps its transfer plugin apart from the plugins that hold the data. The server
// (pkg/dnsserver) hands it the requests that are not queries of the zone data, through the
// two methods of Handler, with what the server knows of the client (Client); it reads the
// zones from a zonedb.Store.
//
// What it owns:
//   - AXFR (RFC 5936) and IXFR (RFC 1995) out: the full zone, or the condensed difference
//     from the zone's journal (zonedb), in messages of about 16 KiB over TCP; for a signed
//     zone the signed full zone the server makes (Options.Signed), to AXFR and IXFR alike;
//   - who may transfer: loopback clients, and those of Options.AllowTransfer, signed with
//     Options.TSIG when there is one (RFC 8945);
//   - NOTIFY (RFC 1996): sent to the secondaries after each zone change (Notifier, with
//     retransmission), and answered as a primary does when received (Handler.ServeNotify);
//   - the metrics of transfers, NOTIFY messages and journals (Metrics).
//
// What it must not do:
//   - listen or read requests off the wire, verify TSIG signatures or answer queries: the
//     server does, and tells it the client's address and whether its request was signed;
//   - change zone data: it only reads snapshots and versions of the store;
//   - keep package-level mutable state, or register metrics globally.
package xfr
