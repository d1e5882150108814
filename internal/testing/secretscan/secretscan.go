// Package secretscan checks that no Secret value a test created reaches what a manager shows
// its users: its logs, Events, the status of dnsplane's objects, and its metrics. A Scanner
// learns the values from the Secrets it is shown (AddSecret, or Watch for every Secret of an API
// server) and checks every text it is shown against all of them; Err reports what it found.
//
// It owns the rule of which values are secret (Needles) and the matching. It is imported by
// tests only, owns no production code, and never prints a value it looks for: a hit names the
// Secret, the key and where it was seen, with the value masked.
package secretscan

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// MinLen is the shortest value a Scanner looks for, in bytes. A shorter value ("1", "true",
// "us-east-1") would match ordinary text, so tests give their secrets longer values.
const MinLen = 8

// Needle is one string that must never be seen: a form of one Secret value.
type Needle struct {
	// Value is the string looked for.
	Value string
	// Secret is the Secret's namespace/name and Key the data key that holds it.
	Secret, Key string
	// Form says how Value encodes the Secret's value: "raw", "base64" (how a Secret dump
	// shows it), "json" (as a string inside a JSON log entry), or "json:<field>" (one field of a
	// JSON value, such as a Google service account's private_key).
	Form string
}

// confidentialJSONFields are the fields of a JSON credential (a Google service account key)
// whose values are secrets proper; the others (client_email, project_id) are identifiers.
var confidentialJSONFields = []string{"private_key", "private_key_id", "client_secret", "refresh_token"}

// Needles returns the strings that would show a value of s outside it. Which values are secret
// depends on s's type: for a provider's Secret (dnsplane.io/*), those of
// factory.ConfidentialKeys; for kubernetes.io/tls, tls.key; for a service-account token, token;
// for any other type, every value. Each value of MinLen bytes or more (spaces around it
// trimmed) gives its raw, base64 and JSON-escaped forms, and a JSON value also its confidential fields
// (confidentialJSONFields); a webhook's WEBHOOK_HEADERS also each header's value ("header:<name>"). The result is sorted and has no duplicates.
func Needles(s *corev1.Secret) []Needle {
	var keys []string
	switch {
	case strings.HasPrefix(string(s.Type), "dnsplane.io/"):
		keys = factory.ConfidentialKeys(s.Type)
	case s.Type == corev1.SecretTypeTLS:
		keys = []string{corev1.TLSPrivateKeyKey}
	case s.Type == corev1.SecretTypeServiceAccountToken:
		keys = []string{corev1.ServiceAccountTokenKey}
	default:
		for k := range s.Data {
			keys = append(keys, k)
		}
		for k := range s.StringData {
			keys = append(keys, k)
		}
	}
	ref := s.Namespace + "/" + s.Name
	var out []Needle
	add := func(key, form, v string) { out = append(out, Needle{Value: v, Secret: ref, Key: key, Form: form}) }
	for _, k := range keys {
		v, ok := s.Data[k]
		if sv, set := s.StringData[k]; set {
			v, ok = []byte(sv), true
		}
		if !ok {
			continue
		}
		raw := strings.TrimSpace(string(v))
		if len(raw) < MinLen {
			continue
		}
		add(k, "raw", raw)
		add(k, "base64", base64.StdEncoding.EncodeToString([]byte(raw)))
		if esc := jsonEscaped(raw); esc != raw {
			add(k, "json", esc)
		}
		if k == factory.KeyWebhookHeaders {
			// "Name: value" lines: each value is a credential of its own.
			for line := range strings.SplitSeq(raw, "\n") {
				if name, hv, ok := strings.Cut(line, ":"); ok && len(strings.TrimSpace(hv)) >= MinLen {
					add(k, "header:"+strings.TrimSpace(name), strings.TrimSpace(hv))
				}
			}
		}
		var fields map[string]any
		if json.Unmarshal([]byte(raw), &fields) == nil {
			for _, f := range confidentialJSONFields {
				if fv, ok := fields[f].(string); ok && len(fv) >= MinLen {
					add(k, "json:"+f, fv)
					if esc := jsonEscaped(fv); esc != fv {
						add(k, "json:"+f, esc)
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b Needle) int {
		return cmp.Or(strings.Compare(a.Secret, b.Secret), strings.Compare(a.Key, b.Key), strings.Compare(a.Form, b.Form), strings.Compare(a.Value, b.Value))
	})
	return slices.CompactFunc(out, func(a, b Needle) bool { return a == b })
}

// jsonEscaped returns v as it appears inside a JSON string (no quotes).
func jsonEscaped(v string) string {
	b, _ := json.Marshal(v)
	return string(b[1 : len(b)-1])
}

// Hit is one needle seen somewhere.
type Hit struct {
	Needle Needle
	// Where names what held it: "log", "Event ns/name", "status of DNSZone ns/name", "metrics".
	Where string
	// Context is up to 80 bytes around the hit, with the value masked.
	Context string
}

// String describes h without the value.
func (h Hit) String() string {
	return fmt.Sprintf("the %s form of key %s of Secret %s, in %s: %q", h.Needle.Form, h.Needle.Key, h.Needle.Secret, h.Where, h.Context)
}

// ringSpan is how long a Scanner keeps log text to check again against values it learns later:
// a manager may log a Secret it read before the Scanner's watch delivered that Secret.
const ringSpan = 30 * time.Second

// ringMax caps the kept log text, in bytes.
const ringMax = 32 << 20

type entry struct {
	at   time.Time
	text string
}

// Scanner holds the needles it has learnt and the hits it has seen. It is safe for concurrent
// use; the zero value is not ready, use New.
type Scanner struct {
	mu       sync.Mutex
	needles  map[string]Needle // by Value
	forgiven map[string]bool   // Secret+"\x00"+Key of the values a canary leaked on purpose
	hits     []Hit
	seen     map[string]bool // Where+Value, so one leak repeated is one hit per place
	ring     []entry         // recent log text
	ringSize int
	now      func() time.Time
}

// New returns an empty Scanner.
func New() *Scanner {
	return &Scanner{needles: map[string]Needle{}, forgiven: map[string]bool{}, seen: map[string]bool{}, now: time.Now}
}

// AddSecret learns s's needles and checks the recent log text (the last 30 s) against the new
// ones.
func (s *Scanner) AddSecret(sec *corev1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fresh []Needle
	for _, n := range Needles(sec) {
		if _, ok := s.needles[n.Value]; !ok {
			s.needles[n.Value] = n
			fresh = append(fresh, n)
		}
	}
	for _, e := range s.ring {
		s.checkLocked("log", e.text, fresh)
	}
}

// Check records a hit for every needle that text holds; where names text's source.
func (s *Scanner) Check(where, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkLocked(where, text, nil)
}

// checkLocked checks text against only (all needles when nil).
func (s *Scanner) checkLocked(where, text string, only []Needle) {
	check := func(n Needle) {
		i := strings.Index(text, n.Value)
		if i < 0 || s.seen[where+"\x00"+n.Value] {
			return
		}
		s.seen[where+"\x00"+n.Value] = true
		lo, hi := max(0, i-40), min(len(text), i+len(n.Value)+40)
		ctx := text[lo:i] + "<" + n.Key + ">" + text[i+len(n.Value):hi]
		s.hits = append(s.hits, Hit{Needle: n, Where: where, Context: ctx})
	}
	if only != nil {
		for _, n := range only {
			check(n)
		}
		return
	}
	for _, n := range s.needles {
		check(n)
	}
}

// Write checks one log entry (or any log text) and keeps it for 30 s, to be checked against
// Secrets learnt later. It never fails: a Scanner is an io.Writer for a log tee.
func (s *Scanner) Write(p []byte) (int, error) {
	text := string(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkLocked("log", text, nil)
	now := s.now()
	s.ring = append(s.ring, entry{at: now, text: text})
	s.ringSize += len(text)
	drop := 0
	for drop < len(s.ring) && (now.Sub(s.ring[drop].at) > ringSpan || s.ringSize > ringMax) {
		s.ringSize -= len(s.ring[drop].text)
		drop++
	}
	s.ring = slices.Delete(s.ring, 0, drop)
	return len(p), nil
}

// Sync is a no-op (zapcore.WriteSyncer).
func (s *Scanner) Sync() error { return nil }

// Forgive drops the hits of every form of value (a value s has learnt), now and later: a canary
// that leaks value on purpose calls it once it has seen its hits.
func (s *Scanner) Forgive(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.needles[value]; ok {
		s.forgiven[n.Secret+"\x00"+n.Key] = true
	}
}

// Hits returns the hits so far that are not forgiven, of every form of every value.
func (s *Scanner) Hits() []Hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Hit
	for _, h := range s.hits {
		if !s.forgiven[h.Needle.Secret+"\x00"+h.Needle.Key] {
			out = append(out, h)
		}
	}
	return out
}

// Needles returns how many needles s has learnt.
func (s *Scanner) Needles() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.needles)
}

// Err returns nil when there is no hit (Hits), else an error that lists them, values masked.
func (s *Scanner) Err() error {
	hits := s.Hits()
	if len(hits) == 0 {
		return nil
	}
	lines := make([]string, 0, len(hits))
	for _, h := range hits {
		lines = append(lines, "  "+h.String())
	}
	return fmt.Errorf("secret scan: %d Secret values seen where no Secret value may be:\n%s", len(hits), strings.Join(lines, "\n"))
}
