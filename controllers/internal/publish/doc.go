// Package publish is what the DNSEndpoint and DNSRecord controllers share: choosing a DNSZone
// for each endpoint (Assign), planning each zone against its zone writer's snapshot (Planner),
// and the plan summary kept in status (StatusPlan). It owns no reconcile loop and no status
// conditions; each controller maps the outcome to its own kind.
package publish
