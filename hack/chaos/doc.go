// Command chaos is the nemesis of the Gslb partition guarantee (docs/reliability.md, "The
// nemesis"): it runs n members as `bin/manager --local` processes, each under its own Unix user
// with its DNS server on its own loopback address, real HTTP targets on both address families,
// and a seeded random schedule of faults (symmetric and asymmetric cuts by iptables owner
// match, majority/minority splits, a bridge member, SIGKILL and restart of a manager, a target
// down on one family, a member's clock skewed). A query loop asks every member's DNS server for
// the Gslb host's A and AAAA records and logs every answer; the checker (Check, pure) reads the
// answers and the schedule's ground truth and reports every violation of the invariants S1, S2,
// L1 and C1 with its time and the seed.
//
//	sudo go run ./hack/chaos -seed 7 -duration 10m
//	go run ./hack/chaos -check /tmp/dnsplane-chaos-7   # check a run's logs again
//
// It needs root (iptables, useradd, ip addr) and removes every rule, address, user and process
// it made on every exit path, and any left over by an earlier run when it starts.
package main
