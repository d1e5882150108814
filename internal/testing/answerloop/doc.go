// Package answerloop is the query loop of the tests that change who serves or who writes
// records under queries (takeovers, leader kills, pod deletions, helm upgrades): it asks a DNS
// server a fixed set of names, in rounds or at a fixed rate, each on a new UDP socket, and
// counts the answers by outcome: right, timeout, network error, an rcode, or wrong (an answer
// not among the name's allowed values, or not authoritative when that is asked for).
//
// It owns only the asking and the counting; the tests decide what a failure means. It must not
// assert on time: callers log the rates and durations it reports.
package answerloop
