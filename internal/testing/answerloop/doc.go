// Package answerloop is the query loop of the takeover tests (controllers and e2e): it asks a
// DNS server a fixed set of names every interval while records change hands, and counts the
// queries and the answers that are missing or not one of each name's allowed values.
package answerloop
